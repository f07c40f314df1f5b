/**
 * @module Per-address bookkeeping for the device endpoint, by the key of `address-key.ts`: open
 * sessions per address, and two upgrade budgets. Anonymous upgrades (no credential, or a wrong
 * one) share one budget per address; an upgrade presenting a valid credential spends a budget of
 * its own per address and device identity, so strangers behind the same NAT cannot spend a real
 * device's budget, and one device reconnecting in a loop spends only its own. Both maps are
 * bounded, so a spray of source addresses or identities cannot grow them without limit; an
 * address with no sessions is forgotten first.
 */
import { TokenBucket, type RateLimit } from './token-bucket.ts';
import { makeRoom } from './bounded-map.ts';

interface Entry {
  sessions: number;
  upgrades: TokenBucket;
}

export class PerIpLimits {
  readonly #entries = new Map<string, Entry>();
  readonly #authenticated = new Map<string, TokenBucket>();
  readonly #rate: RateLimit;
  readonly #maxAddresses: number;

  constructor(rate: RateLimit, maxAddresses = 50_000) {
    this.#rate = rate;
    this.#maxAddresses = maxAddresses;
  }

  /** Takes one anonymous upgrade attempt for `address`; false when it is over the rate. */
  takeUpgrade(address: string): boolean {
    return this.#entry(address).upgrades.take();
  }

  /** Takes one upgrade attempt of a client that presented a valid credential for `identity`. */
  takeAuthenticatedUpgrade(address: string, identity: string): boolean {
    const key = `${address}\n${identity}`;
    let bucket = this.#authenticated.get(key);
    if (bucket) {
      // Most recently used last, so the oldest are forgotten first.
      this.#authenticated.delete(key);
    } else {
      // A tenth at once, so a spray of new identities does not evict on every upgrade.
      if (this.#authenticated.size >= this.#maxAddresses) makeRoom(this.#authenticated, this.#maxAddresses * 0.9);
      bucket = new TokenBucket(this.#rate);
    }
    this.#authenticated.set(key, bucket);
    return bucket.take();
  }

  sessions(address: string): number {
    return this.#entries.get(address)?.sessions ?? 0;
  }

  opened(address: string): void {
    this.#entry(address).sessions++;
  }

  closed(address: string): void {
    const e = this.#entries.get(address);
    if (e && e.sessions > 0) e.sessions--;
  }

  #entry(address: string): Entry {
    let e = this.#entries.get(address);
    if (!e) {
      if (this.#entries.size >= this.#maxAddresses) this.#evict();
      e = { sessions: 0, upgrades: new TokenBucket(this.#rate) };
      this.#entries.set(address, e);
    }
    return e;
  }

  /** Forgets the oldest addresses without sessions (their rate history goes with them). */
  #evict(): void {
    for (const [address, e] of this.#entries) {
      if (e.sessions === 0) this.#entries.delete(address);
      if (this.#entries.size < this.#maxAddresses * 0.9) return;
    }
  }
}
