/**
 * @module Work due at given times on one timer: the fakes pace every stream of a burst (the
 * model's tokens, the TTS's audio chunks, the ASR's answers) through it, so a hundred streams
 * cost one timer and one wake-up per moment that has work, not a timer each.
 */

interface Job {
  at: number;
  run: () => void;
}

/** Jobs this close after the one that woke the queue run in the same wake-up. */
const SAME_MOMENT_MS = 1;

export class DueQueue {
  /** Sorted by `at`; equal times keep their order. */
  readonly #jobs: Job[] = [];
  #timer: NodeJS.Timeout | null = null;
  #armedFor = Number.POSITIVE_INFINITY;
  #closed = false;

  /** Runs `run` at `at` (performance.now() time), or at the next wake-up if that is already past. */
  at(at: number, run: () => void): void {
    if (this.#closed) return;
    let lo = 0;
    let hi = this.#jobs.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((this.#jobs[mid] as Job).at <= at) lo = mid + 1;
      else hi = mid;
    }
    this.#jobs.splice(lo, 0, { at, run });
    if (at < this.#armedFor) this.#arm();
  }

  /** Jobs waiting (for tests and the stats). */
  get size(): number {
    return this.#jobs.length;
  }

  /** Drops every job and the timer. */
  close(): void {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#jobs.length = 0;
  }

  #arm(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    const first = this.#jobs[0];
    this.#armedFor = first ? first.at : Number.POSITIVE_INFINITY;
    if (!first) return;
    this.#timer = setTimeout(() => this.#fire(), Math.max(0, first.at - performance.now()));
  }

  #fire(): void {
    this.#timer = null;
    this.#armedFor = Number.POSITIVE_INFINITY;
    const now = performance.now() + SAME_MOMENT_MS;
    let n = 0;
    while (n < this.#jobs.length && (this.#jobs[n] as Job).at <= now) n++;
    // Jobs scheduled by these runs go into the queue (and may arm the timer) as usual.
    for (const job of this.#jobs.splice(0, n)) {
      try {
        job.run();
      } catch (err) {
        // One stream's fault (a write to a socket that broke) must not stop the others.
        process.stderr.write(`due-queue: a job failed: ${err instanceof Error ? err.message : String(err)}\n`);
      }
    }
    if (!this.#timer && !this.#closed) this.#arm();
  }
}
