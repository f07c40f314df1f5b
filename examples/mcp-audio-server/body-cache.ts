/**
 * @module A small LRU of whole bodies from hosts that ignore Range (answer 200 with the full
 * file): without it, every 100 KB page would download the whole file again. Bounded in bytes.
 */

export class BodyCache {
  readonly #maxBytes: number;
  readonly #entries = new Map<string, Buffer>();
  #bytes = 0;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  get(url: string): Buffer | undefined {
    const body = this.#entries.get(url);
    if (body) {
      // Re-insert to mark it most recently used.
      this.#entries.delete(url);
      this.#entries.set(url, body);
    }
    return body;
  }

  /** Keeps `body` unless it alone exceeds the cap; evicts the least recently used to fit. */
  set(url: string, body: Buffer): void {
    if (body.length > this.#maxBytes) return;
    const old = this.#entries.get(url);
    if (old) {
      this.#entries.delete(url);
      this.#bytes -= old.length;
    }
    while (this.#bytes + body.length > this.#maxBytes) {
      const oldest = this.#entries.keys().next();
      if (oldest.done === true) break;
      this.#bytes -= (this.#entries.get(oldest.value) as Buffer).length;
      this.#entries.delete(oldest.value);
    }
    this.#entries.set(url, body);
    this.#bytes += body.length;
  }

  get size(): number {
    return this.#entries.size;
  }
}
