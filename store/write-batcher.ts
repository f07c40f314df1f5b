/**
 * @module The one way writes that need not wait are made: `add` only queues (a session's open, an
 * OTA request or a turn's end never waits for the database), and one write per `flushMs` (or per
 * `maxBatch` items) stores what is queued in one transaction. better-sqlite3 is synchronous, so
 * each statement it runs holds the event loop: a burst of hellos writing a row each would stall
 * every device's audio, and one transaction per tick costs one commit instead of hundreds.
 * Items with the same key (`keyOf`) replace each other while queued (`merge` decides how), so a
 * device seen ten times in a tick is written once. A failed write keeps its items for the next
 * attempt, up to `maxQueued` (past that the oldest are dropped, with a warning). `close` writes
 * what is left: a clean stop loses nothing.
 */
import type { Logger } from '../core/logger.ts';

export interface WriteBatcherOptions<T> {
  write(items: readonly T[]): Promise<void>;
  log: Logger;
  /** What the items are, for log lines ("turns", "device records"). */
  what: string;
  flushMs?: number;
  /** Items written in one transaction at most. */
  maxBatch?: number;
  /** Queued items that start a write before the tick (default `maxBatch`). */
  flushAt?: number;
  maxQueued?: number;
  /** Items of one key replace each other while queued (unset: every item is kept). */
  keyOf?: (item: T) => string;
  /** The item a newer one of the same key leaves queued (default: the newer). */
  merge?: (older: T, newer: T) => T;
}

/** What a repository that queues its writes needs of the batcher. */
export interface WriteQueue<T> {
  add(items: readonly T[]): void;
  settled(): Promise<void>;
  flush(): Promise<void>;
}

export class WriteBatcher<T> implements WriteQueue<T> {
  readonly #o: Required<Omit<WriteBatcherOptions<T>, 'keyOf'>> & { keyOf: ((item: T) => string) | undefined };
  /** Queued items in arrival order, by key (a counter for items without one). */
  #queue = new Map<string, T>();
  #seq = 0;
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> | undefined;
  #closed = false;
  /** `settled` callers, told when the write under way (or the next) ends. */
  readonly #waiters: Array<() => void> = [];

  constructor(opts: WriteBatcherOptions<T>) {
    this.#o = {
      flushMs: 250,
      maxBatch: 200,
      flushAt: opts.maxBatch ?? 200,
      maxQueued: 10_000,
      merge: (_older, newer) => newer,
      ...opts,
      keyOf: opts.keyOf,
    };
  }

  get size(): number {
    return this.#queue.size;
  }

  /** True when some queued item matches (e.g. a pair's turns not stored yet). */
  holds(match: (item: T) => boolean): boolean {
    for (const item of this.#queue.values()) if (match(item)) return true;
    return false;
  }

  add(items: readonly T[]): void {
    for (const item of items) this.#put(item);
    if (this.#queue.size > this.#o.maxQueued) {
      const dropped = this.#queue.size - this.#o.maxQueued;
      let n = dropped;
      for (const k of this.#queue.keys()) {
        if (n-- <= 0) break;
        this.#queue.delete(k);
      }
      this.#o.log.warn(
        { dropped },
        `store: ${this.#o.what} waiting for the database past the limit; the oldest were dropped`,
      );
    }
    // After close (a session ending past the shutdown's flush) the write goes at once.
    if (this.#closed || this.#queue.size >= this.#o.flushAt) void this.flush();
    else this.#arm(this.#o.flushMs);
  }

  /** Resolves once what is queued now was attempted, by the next timed write (it does not hurry it). */
  settled(): Promise<void> {
    if (this.#queue.size === 0 && !this.#flushing) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** Writes what is queued (one batch after another); resolves when the queue was attempted. */
  flush(): Promise<void> {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#flushing ??= this.#drain().finally(() => {
      this.#flushing = undefined;
      for (const w of this.#waiters.splice(0)) w();
    });
    return this.#flushing;
  }

  /** Writes what is left, then writes each later item at once. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.flush();
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #put(item: T): void {
    const key = this.#o.keyOf?.(item);
    if (key === undefined) {
      this.#queue.set(`#${this.#seq++}`, item);
      return;
    }
    const older = this.#queue.get(key);
    this.#queue.set(key, older === undefined ? item : this.#o.merge(older, item));
  }

  /**
   * The next write. Queued items keep the process up until then (at most `flushMs`: nothing
   * queued is lost to a natural exit); a retry after a failure does not (the database may be gone).
   */
  #arm(ms: number, retry = false): void {
    if (this.#timer) return;
    this.#timer = setTimeout(() => void this.flush(), ms);
    if (retry) this.#timer.unref();
  }

  async #drain(): Promise<void> {
    let first = true;
    while (this.#queue.size > 0) {
      // Between batches the loop turns (sockets, timers): a long queue is many short holds, not one.
      if (!first) await new Promise<void>((resolve) => setImmediate(resolve));
      first = false;
      const batch: Array<[string, T]> = [];
      for (const entry of this.#queue) {
        if (batch.length >= this.#o.maxBatch) break;
        batch.push(entry);
      }
      for (const [k] of batch) this.#queue.delete(k);
      try {
        await this.#o.write(batch.map(([, v]) => v));
      } catch (err) {
        // Back at the front; a newer item of the same key queued meanwhile is merged over it.
        const rest = this.#queue;
        this.#queue = new Map(batch);
        for (const [k, v] of rest) {
          const older = this.#queue.get(k);
          this.#queue.set(k, older === undefined ? v : this.#o.merge(older, v));
        }
        this.#o.log.error(
          { err: err instanceof Error ? err.message : String(err), items: batch.length },
          `store: writing ${this.#o.what} failed; retried later`,
        );
        if (!this.#closed) this.#arm(Math.max(this.#o.flushMs, 5000), true);
        return;
      }
    }
  }
}
