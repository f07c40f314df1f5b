/**
 * @module Sign-in attempts per address: a token bucket each (`burst` at once, refilled at
 * `perMinute`), so guessing the admin token from one address is slow, at the sign-in and as a
 * wrong bearer token alike. The map of addresses is
 * bounded: beyond `maxAddresses` the oldest are forgotten.
 */
import { TokenBucket } from '../../core/token-bucket.ts';
import { makeRoom } from '../../core/bounded-map.ts';

export interface SignInLimitOptions {
  burst: number;
  perMinute: number;
  maxAddresses?: number;
  now?: () => number;
}

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
