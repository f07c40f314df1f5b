/**
 * @module Runs the Silero steps of many streams as one model run. A run costs about 0.3 ms
 * whatever it holds up to a few rows (onnxruntime's per-call work dominates a 576-sample step),
 * while a batch of 8 costs ~0.09 ms a row and one of 32 ~0.07 ms (BENCHMARKS.md). So steps are
 * not run when asked:
 * - while few steps come (a lone device, a handful), they wait only for the end of the current
 *   event-loop turn (`setImmediate`), which gathers the packets that reached the thread together;
 * - while several streams ask (BUSY_STREAMS in the last 100 ms: devices talking at once, whose
 *   60 ms packets arrive spread over the period, one or two per turn), the first step of a batch
 *   waits up to GATHER_MS for the others, and no longer once every one of them has asked (a
 *   backlog runs at once). A speech boundary is then found up to GATHER_MS later, on a decision
 *   that waits 700 ms of silence anyway; frames of a long pause are not scored at all.
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
/** How long the first step of a batch waits for others while many come. */
const GATHER_MS = 10;
/** Streams asking within ACTIVE_WINDOW_MS from which batches gather. */
const BUSY_STREAMS = 4;
const ACTIVE_WINDOW_MS = 100;

/**
 * One model run over `n` rows: `input` is n × STEP_INPUT, `state` is the model's 2 × n × 128
 * layout. Resolves with n probabilities and the new state in the same layout.
 */
export type BatchRun = (
  input: Float32Array,
  state: Float32Array,
  n: number,
) => Promise<{ prob: Float32Array; state: Float32Array }>;

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
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  /** Streams (by owner) that asked in the current and the previous ACTIVE_WINDOW_MS. */
  #windowStart = 0;
  #windowStreams = new Set<object>();
  #lastWindowStreams = 0;
  /** Model runs, the steps they held, and the batches that waited for others (tests and benches read them). */
  runs = 0;
  steps = 0;
  gathered = 0;

  constructor(run: BatchRun) {
    this.#run = run;
  }

  /**
   * Scores one step. `input` (STEP_INPUT samples) and `state` (STEP_STATE) are read when the
   * batch runs, so the caller leaves them alone until this resolves; the new state is written
   * back into `state` (a caller that resets meanwhile gives itself a new array instead).
   * `owner` identifies the stream, whatever arrays it uses over time: it decides how many
   * streams are talking.
   */
  score(input: Float32Array, state: Float32Array, owner: object = state): Promise<number> {
    if (this.#closed) return Promise.reject(new Error('silero vad: model closed'));
    this.#countStream(owner);
    return new Promise<number>((resolve, reject) => {
      this.#queue.push({ input, state, resolve, reject });
      if (this.#timer && this.#queue.length >= Math.min(MAX_BATCH, this.#active())) {
        // Every stream that talks has asked, or the batch is full: no need to wait for more.
        clearTimeout(this.#timer);
        this.#timer = undefined;
        this.#scheduled = false;
      }
      this.#schedule();
    });
  }

  /** Rejects the steps still waiting; later ones are refused. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#windowStreams.clear();
    const err = new Error('silero vad: model closed');
    for (const s of this.#queue.splice(0)) s.reject(err);
  }

  #countStream(owner: object): void {
    const now = performance.now();
    if (now - this.#windowStart >= ACTIVE_WINDOW_MS) {
      this.#lastWindowStreams = now - this.#windowStart < 2 * ACTIVE_WINDOW_MS ? this.#windowStreams.size : 0;
      this.#windowStart = now;
      this.#windowStreams.clear();
    }
    this.#windowStreams.add(owner);
  }

  /** Streams talking now: those that asked in the current or the previous window. */
  #active(): number {
    return Math.max(this.#lastWindowStreams, this.#windowStreams.size);
  }

  #schedule(): void {
    if (this.#scheduled || this.#running || this.#queue.length === 0) return;
    this.#scheduled = true;
    const go = (): void => {
      this.#scheduled = false;
      this.#timer = undefined;
      void this.#flush();
    };
    const active = this.#active();
    if (active >= BUSY_STREAMS && this.#queue.length < Math.min(MAX_BATCH, active)) {
      this.gathered++;
      this.#timer = setTimeout(go, GATHER_MS);
    } else setImmediate(go);
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
