/**
 * @module Guesses at a secret (the admin token, `server.adminSecret`) per key: a token bucket each
 * (`burst` at once, refilled at `perMinute`), so guessing from one address is slow, whichever route
 * the guess is made at. A key whose guesses are spent is refused before the comparison, so a right
 * guess then is not told apart from a wrong one. The map of keys is bounded: beyond `maxAddresses`
 * the oldest are forgotten.
 */
import { TokenBucket } from '../../core/token-bucket.ts';
import { makeRoom } from '../../core/bounded-map.ts';

export interface SignInLimitOptions {
  burst: number;
  perMinute: number;
  maxAddresses?: number;
  now?: () => number;
}

/** What one presented secret came to: it matched, it did not (one guess spent), or it was not compared. */
export type Attempt = 'match' | 'wrong' | 'over';

export class SignInLimit {
  readonly #buckets = new Map<string, TokenBucket>();
  readonly #opts: SignInLimitOptions;

  constructor(opts: SignInLimitOptions) {
    this.#opts = opts;
  }

  /** Takes one attempt for `address`; false when it is over the limit. */
  take(address: string): boolean {
    return this.#bucket(address).take();
  }

  /** Whether `address` has no attempt left; takes none. */
  exhausted(address: string): boolean {
    return this.#buckets.get(address)?.empty() ?? false;
  }

  /**
   * The one way a presented secret is checked: `matches` runs only while `key` has guesses left,
   * and a wrong secret spends one. A right one spends nothing (the operator's own requests are
   * not limited).
   */
  attempt(key: string, matches: () => boolean): Attempt {
    if (this.exhausted(key)) return 'over';
    if (matches()) return 'match';
    this.take(key);
    return 'wrong';
  }

  #bucket(address: string): TokenBucket {
    let b = this.#buckets.get(address);
    if (!b) {
      makeRoom(this.#buckets, this.#opts.maxAddresses ?? 10_000);
      b = new TokenBucket({ burst: this.#opts.burst, perSecond: this.#opts.perMinute / 60 }, this.#opts.now);
      this.#buckets.set(address, b);
    }
    return b;
  }

  /** Seconds until one more attempt is allowed: what `Retry-After` says. */
  get retryAfterS(): number {
    return Math.ceil(60 / this.#opts.perMinute);
  }
}
