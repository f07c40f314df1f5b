/**
 * @module An async job run on request, one run at a time and at most one start per interval:
 * requests that come while a run goes or waits for the interval are folded into one run after it,
 * so a flood of requests costs two runs, not one each, and the last state is always handled. The
 * MCP endpoint lists a bridge's tools again this way on `list_changed`, and writes this process's
 * bridges for the other replicas.
 */
import { realClock, type Clock, type TimerHandle } from './clock.ts';

export interface CoalescedJobOptions {
  /**
   * One run. Returns its promise, or undefined when there was nothing to do (that does not count
   * as a start). A rejection is the job's own business: it is caught and dropped here.
   */
  run: () => Promise<unknown> | undefined;
  /** Least time between the starts of two runs, ms. */
  minIntervalMs: number;
  clock?: Clock;
}

export class CoalescedJob {
  readonly #o: CoalescedJobOptions;
  readonly #clock: Clock;
  #running: Promise<void> | undefined;
  #again = false;
  #timer: TimerHandle | undefined;
  #startedAt = Number.NEGATIVE_INFINITY;
  #stopped = false;

  constructor(opts: CoalescedJobOptions) {
    this.#o = opts;
    this.#clock = opts.clock ?? realClock;
  }

  /** Neither running nor waiting for its interval. */
  get idle(): boolean {
    return this.#running === undefined && this.#timer === undefined;
  }

  /** Runs the job now, or once when the running one has ended and the interval has passed. */
  request(): void {
    if (this.#stopped) return;
    if (!this.idle) {
      this.#again = true;
      return;
    }
    const wait = this.#startedAt + this.#o.minIntervalMs - this.#clock.now();
    if (wait > 0) {
      this.#timer = this.#clock.setTimeout(() => {
        this.#timer = undefined;
        // This run answers every request that came while it waited.
        this.#again = false;
        this.request();
      }, wait);
      // Waiting alone does not keep the process up; its owner stops it.
      (this.#timer as { unref?: () => void }).unref?.();
      return;
    }
    const run = this.#o.run();
    if (run === undefined) return;
    this.#startedAt = this.#clock.now();
    this.#hold(run);
  }

  /** Counts now as a run's start made outside the job (the first of a series): the next run waits the interval from here. */
  started(): void {
    this.#startedAt = this.#clock.now();
  }

  /**
   * Holds off runs while `work` (something else on the same resource) goes; a request made
   * meanwhile runs after it. Its start does not count as a run's. False, and `work` not called,
   * when the job is not idle.
   */
  holdFor(work: () => Promise<unknown>): boolean {
    if (this.#stopped || !this.idle) return false;
    this.#hold(work());
    return true;
  }

  /** No run starts any more; resolves when the running one has ended. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }

  #hold(p: Promise<unknown>): void {
    this.#running = p
      .then(
        () => undefined,
        () => undefined,
      )
      .finally(() => {
        this.#running = undefined;
        if (this.#again) {
          this.#again = false;
          this.request();
        }
      });
  }
}
