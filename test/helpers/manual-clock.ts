/**
 * A `Clock` that moves only when the test moves it: timing code (the pacer, the wait before
 * `tts stop`) runs on it exactly and instantly, with no real sleep and no wall-clock bound.
 *
 * Between two timers it lets the event loop turn once (a real `setImmediate`), so the promise
 * chains a timer starts (a pacer's play loop pulling the next frame) settle before the next one
 * fires, as they would in the real gap between two timers.
 */
import type { Clock, TimerHandle } from '../../core/clock.ts';

interface ManualTimer {
  at: number;
  seq: number;
  fn: () => void;
}

/** Captured at load, so a test that also mocks the global timers cannot stall the clock. */
const realSetImmediate = globalThis.setImmediate;
const turn = (): Promise<void> => new Promise((r) => realSetImmediate(r));

export class ManualClock implements Clock {
  #now: number;
  #seq = 0;
  /** Pending timers, earliest first (ties in the order they were set). */
  #timers: ManualTimer[] = [];

  constructor(start = 1000) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const t: ManualTimer = { at: this.#now + Math.max(0, ms), seq: this.#seq++, fn };
    let i = this.#timers.length;
    while (i > 0 && (this.#timers[i - 1] as ManualTimer).at > t.at) i--;
    this.#timers.splice(i, 0, t);
    return t;
  }

  clearTimeout(timer: TimerHandle | undefined): void {
    const i = this.#timers.indexOf(timer as ManualTimer);
    if (i >= 0) this.#timers.splice(i, 1);
  }

  /** Timers not yet fired. */
  get pending(): number {
    return this.#timers.length;
  }

  /**
   * Time passes while the thread is busy: the clock moves by `ms` and no timer fires (they fire
   * late, at the next `advance` or `run`). For a send callback that holds the thread.
   */
  busy(ms: number): void {
    this.#now += ms;
  }

  /** Moves the clock forward by `ms`, firing every timer due on the way at its own time. */
  async advance(ms: number): Promise<void> {
    const end = this.#now + ms;
    await turn();
    for (let t = this.#timers[0]; t !== undefined && t.at <= end; t = this.#timers[0]) await this.#fire(t);
    this.#now = Math.max(this.#now, end);
    await turn();
  }

  /**
   * Fires timers in order until `p` settles and returns its outcome. Fails, naming `what`, when
   * nothing is left to fire and `p` is still pending, or after `maxMs` of clock time.
   */
  async run<T>(p: Promise<T>, what: string, maxMs = 600_000): Promise<T> {
    let settled = false;
    const watched = p.finally(() => {
      settled = true;
    });
    const end = this.#now + maxMs;
    await turn();
    while (!settled) {
      const t = this.#timers[0];
      if (t === undefined) {
        // A few more turns of the loop for work that is not on this clock (I/O, other timers).
        for (let i = 0; i < 10 && !settled; i++) await turn();
        if (!settled) throw new Error(`${what}: still pending and no timer left on the clock`);
        break;
      }
      if (t.at > end) throw new Error(`${what}: still pending after ${maxMs} ms of clock time`);
      await this.#fire(t);
    }
    return watched;
  }

  async #fire(t: ManualTimer): Promise<void> {
    this.#timers.shift();
    this.#now = Math.max(this.#now, t.at);
    t.fn();
    await turn();
  }
}
