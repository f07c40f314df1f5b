/**
 * @module Stored turns written in batches: `add` only queues (a turn's end never waits for the
 * database), one write per `flushMs` or per `maxBatch` rows. A failed write keeps its rows for the
 * next attempt, up to `maxQueued` (past that the oldest are dropped, with a warning).
 */
import type { Logger } from '../../core/logger.ts';
import type { NewTurn } from '../../store/memory.ts';

export interface TurnBatcherOptions {
  write(rows: readonly NewTurn[]): Promise<void>;
  log: Logger;
  flushMs?: number;
  maxBatch?: number;
  maxQueued?: number;
}

export class TurnBatcher {
  readonly #o: Required<TurnBatcherOptions>;
  #queue: NewTurn[] = [];
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> | undefined;

  constructor(opts: TurnBatcherOptions) {
    this.#o = { flushMs: 250, maxBatch: 200, maxQueued: 10_000, ...opts };
  }

  add(rows: readonly NewTurn[]): void {
    this.#queue.push(...rows);
    if (this.#queue.length > this.#o.maxQueued) {
      const dropped = this.#queue.length - this.#o.maxQueued;
      this.#queue.splice(0, dropped);
      this.#o.log.warn({ dropped }, 'memory: turns waiting for the database past the limit; the oldest were dropped');
    }
    if (this.#queue.length >= this.#o.maxBatch) void this.flush();
    else if (!this.#timer) {
      this.#timer = setTimeout(() => void this.flush(), this.#o.flushMs);
      this.#timer.unref();
    }
  }

  /** Writes what is queued (one batch after another); resolves when the queue was attempted. */
  flush(): Promise<void> {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#flushing ??= this.#drain().finally(() => {
      this.#flushing = undefined;
    });
    return this.#flushing;
  }

  async #drain(): Promise<void> {
    while (this.#queue.length > 0) {
      const batch = this.#queue.splice(0, this.#o.maxBatch);
      try {
        await this.#o.write(batch);
      } catch (err) {
        this.#queue.unshift(...batch);
        this.#o.log.error({ err: err instanceof Error ? err.message : String(err), rows: batch.length }, 'memory: storing turns failed; retried later');
        if (!this.#timer) {
          this.#timer = setTimeout(() => void this.flush(), Math.max(this.#o.flushMs, 5000));
          this.#timer.unref();
        }
        return;
      }
    }
  }

  close(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
