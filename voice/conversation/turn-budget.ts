/**
 * @module How many turns one session may start in a sliding window (`conversation.maxTurnsPerMinute`).
 * Every typed text, wake word and utterance starts a turn that aborts the last one, and each turn
 * costs a model request: a device looping `listen detect` must not turn that into hundreds of
 * requests a minute. Past the budget a new turn is refused; the first refusal of each window is
 * the one the device is told about (and the one logged), the others are silent.
 */

/** What to do with a turn the device asks for. */
export type TurnVerdict = 'start' | 'notify' | 'refuse';

export interface TurnBudgetOptions {
  /** Turns allowed per window; 0: no limit. */
  maxTurns: number;
  /** The window, in ms (default 60 s). */
  windowMs?: number;
  /** The clock the window is read on (the session's turns' clock). */
  now: () => number;
}

export class TurnBudget {
  readonly #max: number;
  readonly #windowMs: number;
  readonly #now: () => number;
  /** Start times of the turns in the window, oldest first; never more than `maxTurns`. */
  readonly #starts: number[] = [];
  #lastNoticeAt = Number.NEGATIVE_INFINITY;

  constructor(opts: TurnBudgetOptions) {
    this.#max = opts.maxTurns;
    this.#windowMs = opts.windowMs ?? 60_000;
    this.#now = opts.now;
  }

  /** True when a turn may start now (nothing is recorded). */
  allows(): boolean {
    if (this.#max <= 0) return true;
    this.#forgetOld(this.#now());
    return this.#starts.length < this.#max;
  }

  /** Counts a turn started now. */
  record(): void {
    if (this.#max <= 0) return;
    this.#starts.push(this.#now());
    if (this.#starts.length > this.#max) this.#starts.shift();
  }

  /**
   * Decides a turn asked for now: `start` (counted), `notify` (refused, and the first refusal
   * since the window's notice: tell the device) or `refuse` (refused silently).
   */
  take(): TurnVerdict {
    if (this.allows()) {
      this.record();
      return 'start';
    }
    const now = this.#now();
    if (now - this.#lastNoticeAt < this.#windowMs) return 'refuse';
    this.#lastNoticeAt = now;
    return 'notify';
  }

  #forgetOld(now: number): void {
    while (this.#starts.length > 0 && now - (this.#starts[0] as number) >= this.#windowMs) this.#starts.shift();
  }
}
