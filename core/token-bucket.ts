/**
 * @module A token bucket: `burst` events at once, refilled at `perSecond`. Used to bound what one
 * stranger can make the server do per second (control messages per connection, upgrades per IP).
 */
export interface RateLimit {
  perSecond: number;
  burst: number;
}

export class TokenBucket {
  #tokens: number;
  #last: number;
  readonly #limit: RateLimit;
  readonly #now: () => number;

  constructor(limit: RateLimit, now: () => number = () => performance.now()) {
    this.#limit = limit;
    this.#now = now;
    this.#tokens = limit.burst;
    this.#last = now();
  }

  /** Takes one token; false when the bucket is empty (the event is over the limit). */
  take(): boolean {
    if (this.empty()) return false;
    this.#tokens -= 1;
    return true;
  }

  /** Whether the next `take()` would be refused; takes nothing. */
  empty(): boolean {
    const now = this.#now();
    this.#tokens = Math.min(this.#limit.burst, this.#tokens + ((now - this.#last) / 1000) * this.#limit.perSecond);
    this.#last = now;
    return this.#tokens < 1;
  }
}
