/**
 * @module The one push-to-pull bridge: producers `push()`, one consumer iterates. Used wherever a
 * callback source (a child process, a socket, a timer) feeds an AsyncIterable stage.
 */

export class AsyncQueue<T> implements AsyncIterable<T> {
  #items: T[] = [];
  #waiters: Array<{ resolve: (r: IteratorResult<T>) => void; reject: (e: unknown) => void }> = [];
  #closed = false;
  #error: unknown = undefined;

  /** Number of items waiting to be read; producers use it for backpressure. */
  get size(): number {
    return this.#items.length;
  }

  get closed(): boolean {
    return this.#closed;
  }

  push(item: T): void {
    if (this.#closed) return;
    const waiter = this.#waiters.shift();
    if (waiter) waiter.resolve({ value: item, done: false });
    else this.#items.push(item);
  }

  /** Ends the stream; readers get the queued items, then `done`. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const w of this.#waiters.splice(0)) w.resolve({ value: undefined, done: true });
  }

  /** Ends the stream with an error; queued items are dropped and readers reject. */
  fail(error: unknown): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#error = error;
    this.#items = [];
    for (const w of this.#waiters.splice(0)) w.reject(error);
  }

  next(): Promise<IteratorResult<T>> {
    if (this.#items.length > 0) return Promise.resolve({ value: this.#items.shift() as T, done: false });
    if (this.#error !== undefined) return Promise.reject(this.#error);
    if (this.#closed) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => this.#waiters.push({ resolve, reject }));
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: () => this.next(),
      return: async () => {
        this.close();
        this.#items = [];
        return { value: undefined, done: true };
      },
    };
  }
}
