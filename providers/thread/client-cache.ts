/**
 * @module The provider thread's clients, one per distinct options (an agent's model, base URL,
 * key and temperature are its own client): created on first use, shared by every request with the
 * same options, and bounded: past `max` the least recently used is dropped (a request still
 * streaming keeps its client until it ends; the clients hold no sockets of their own, the
 * keep-alive agents are shared). The configured clients are pinned and never dropped.
 */
import { stableKey } from '../../core/stable-key.ts';

export class ClientCache<O, C> {
  readonly #pinned = new Map<string, Promise<C>>();
  readonly #lru = new Map<string, Promise<C>>();
  readonly #max: number;
  readonly #create: (options: O) => Promise<C>;
  /** Clients made since the thread started (pinned ones included). */
  created = 0;

  constructor(max: number, create: (options: O) => Promise<C>) {
    this.#max = Math.max(1, max);
    this.#create = create;
  }

  /** Makes the client for `options` now and keeps it for good. */
  pin(options: O): Promise<C> {
    const key = stableKey(options);
    let c = this.#pinned.get(key);
    if (!c) {
      c = this.#make(options);
      this.#pinned.set(key, c);
    }
    return c;
  }

  /** The client for these options: the pinned or cached one, or a new one. */
  get(options: O): Promise<C> {
    const key = stableKey(options);
    const pinned = this.#pinned.get(key);
    if (pinned) return pinned;
    let c = this.#lru.get(key);
    if (c) {
      // Most recently used goes last.
      this.#lru.delete(key);
      this.#lru.set(key, c);
      return c;
    }
    c = this.#make(options);
    // A client that could not be made is not kept: the next request tries again.
    c.catch(() => {
      if (this.#lru.get(key) === c) this.#lru.delete(key);
    });
    this.#lru.set(key, c);
    while (this.#lru.size > this.#max) {
      const oldest = this.#lru.keys().next().value;
      if (oldest === undefined) break;
      this.#lru.delete(oldest);
    }
    return c;
  }

  /** Clients kept now (pinned and cached). */
  get size(): number {
    return this.#pinned.size + this.#lru.size;
  }

  #make(options: O): Promise<C> {
    this.created++;
    return this.#create(options);
  }
}
