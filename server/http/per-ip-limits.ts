/**
 * @module Per-address bookkeeping for the device endpoint: open sessions per IP and an upgrade
 * rate per IP. The map of addresses is bounded, so a spray of source addresses cannot grow it
 * without limit; an address with no sessions is forgotten first.
 */
import { TokenBucket, type RateLimit } from '../../core/token-bucket.ts';

interface Entry {
  sessions: number;
  upgrades: TokenBucket;
}

export class PerIpLimits {
  readonly #entries = new Map<string, Entry>();
  readonly #rate: RateLimit;
  readonly #maxAddresses: number;

  constructor(rate: RateLimit, maxAddresses = 50_000) {
    this.#rate = rate;
    this.#maxAddresses = maxAddresses;
  }

  /** Takes one upgrade attempt for `ip`; false when it is over the rate. */
  takeUpgrade(ip: string): boolean {
    return this.#entry(ip).upgrades.take();
  }

  sessions(ip: string): number {
    return this.#entries.get(ip)?.sessions ?? 0;
  }

  opened(ip: string): void {
    this.#entry(ip).sessions++;
  }

  closed(ip: string): void {
    const e = this.#entries.get(ip);
    if (e && e.sessions > 0) e.sessions--;
  }

  #entry(ip: string): Entry {
    let e = this.#entries.get(ip);
    if (!e) {
      if (this.#entries.size >= this.#maxAddresses) this.#evict();
      e = { sessions: 0, upgrades: new TokenBucket(this.#rate) };
      this.#entries.set(ip, e);
    }
    return e;
  }

  /** Forgets the oldest addresses without sessions (their rate history goes with them). */
  #evict(): void {
    for (const [ip, e] of this.#entries) {
      if (e.sessions === 0) this.#entries.delete(ip);
      if (this.#entries.size < this.#maxAddresses * 0.9) return;
    }
  }
}
