/**
 * @module Runs the Silero steps of many streams as one model run. A run costs about 0.3 ms
 * whatever it holds up to a few rows (onnxruntime's per-call work dominates a 576-sample step),
 * while a batch of 8 costs ~0.09 ms a row and one of 32 ~0.07 ms (BENCHMARKS.md). So steps are
 * not run when asked: they wait for the end of the current event-loop turn, by which time every
 * uplink packet that reached this thread together has asked for its step, and then run as one
 * batch. A lone device waits only for `setImmediate`; fifty talking devices share a few runs
 * per 32 ms instead of fifty.
 *
 * Rows are independent in the model, so a stream's probabilities and state do not depend on
 * which other streams share its batch (tested bit for bit).
 */

/** Samples of one step: 64 of context, then 512 new ones (16 kHz). */
export const STEP_INPUT = 64 + 512;
/** The recurrent state of one stream: 2 layers × 128. */
export const STEP_STATE = 2 * 128;
/** Rows per model run; more steps than this wait for the next run. */
const MAX_BATCH = 32;

/**
 * One model run over `n` rows: `input` is n × STEP_INPUT, `state` is the model's 2 × n × 128
 * layout. Resolves with n probabilities and the new state in the same layout.
 */
export type BatchRun = (input: Float32Array, state: Float32Array, n: number) => Promise<{ prob: Float32Array; state: Float32Array }>;

interface Step {
  input: Float32Array;
  state: Float32Array;
  resolve(p: number): void;
  reject(err: unknown): void;
}

export class SileroBatcher {
  readonly #run: BatchRun;
  #queue: Step[] = [];
  #running = false;
  #scheduled = false;
  /** Model runs and the steps they held (tests and benches read them). */
  runs = 0;
  steps = 0;

  constructor(run: BatchRun) {
    this.#run = run;
  }

  /**
   * Scores one step. `input` (STEP_INPUT samples) and `state` (STEP_STATE) are read when the
   * batch runs, so the caller leaves them alone until this resolves; the new state is written
   * back into `state` (a caller that resets meanwhile gives itself a new array instead).
   */
  score(input: Float32Array, state: Float32Array): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      this.#queue.push({ input, state, resolve, reject });
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#scheduled || this.#running || this.#queue.length === 0) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      void this.#flush();
    });
  }

  async #flush(): Promise<void> {
    if (this.#running) return;
    const batch = this.#queue.splice(0, MAX_BATCH);
    const n = batch.length;
    if (n === 0) return;
    this.#running = true;
    const input = new Float32Array(n * STEP_INPUT);
    const state = new Float32Array(n * STEP_STATE);
    const half = STEP_STATE / 2;
    for (let j = 0; j < n; j++) {
      const s = batch[j] as Step;
      input.set(s.input, j * STEP_INPUT);
      // The model's layout is [layer][row][128]; a stream keeps [layer][128].
      state.set(s.state.subarray(0, half), j * half);
      state.set(s.state.subarray(half), (n + j) * half);
    }
    try {
      const out = await this.#run(input, state, n);
      this.runs++;
      this.steps += n;
      for (let j = 0; j < n; j++) {
        const s = batch[j] as Step;
        s.state.set(out.state.subarray(j * half, (j + 1) * half), 0);
        s.state.set(out.state.subarray((n + j) * half, (n + j + 1) * half), half);
        s.resolve(out.prob[j] ?? 0);
      }
    } catch (err) {
      for (const s of batch) s.reject(err);
    } finally {
      this.#running = false;
      // Through setImmediate: the resolved streams' next steps (queued from their promise
      // callbacks) join the next batch instead of running alone.
      this.#schedule();
    }
  }
}
