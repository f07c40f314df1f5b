/**
 * @module The clock that timing code reads and arms timers on. Code whose behaviour is a matter
 * of time (the pacer's cadence, when `tts stop` may go out) takes a `Clock` and defaults to
 * `realClock`, so a test can hand it a clock it advances by hand: exact and instant, with no
 * real sleep and no bound that a loaded machine can break.
 *
 * The real clock is monotonic (`performance.now()`), and its methods look the timer functions up
 * at each call, so `node:test`'s mock timers apply to it too. Calls allocate nothing beyond the
 * timer itself: the pacer reads the clock once per frame for every device.
 */

/** A pending timer, as `setTimeout` returned it; only `clearTimeout` looks inside. */
export type TimerHandle = object;

export interface Clock {
  /** Milliseconds on a monotonic scale (the origin is the clock's own). */
  now(): number;
  /** Calls `fn` once, `ms` from now (at the next turn of the event loop when `ms` ≤ 0). */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  /** Cancels a timer of this clock; undefined or an already fired timer is ignored. */
  clearTimeout(timer: TimerHandle | undefined): void;
}

/** The process's clock: `performance.now()` and the event loop's timers. */
export const realClock: Clock = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (timer) => clearTimeout(timer as NodeJS.Timeout | undefined),
};
