/**
 * @module The shared body of a VAD stream: cuts pushed PCM into the model's frame size, gates
 * near-silent frames to probability 0 (and rests the model through long pauses), serialises pushes, tracks the stream position and feeds the
 * segmenter. A provider only supplies `probability(frame)`.
 */
import { PcmFramer, dbfs } from '../pcm/pcm.ts';
import { Segmenter } from './segmenter.ts';
import type { VadEvent, VadStream, VadStreamOptions } from './vad.ts';

const SAMPLE_RATE = 16000;
const DEFAULT_MIN_DBFS = -55;
/**
 * Quiet frames (under `minDbfs`) still go through the model this long (~0.25 s), so its recurrent
 * state follows the audio into a pause; after that the model is not run until sound returns, and
 * then starts from a fresh state, as at the start of a stream. A device's silence is mostly DTX
 * packets (decoded as zeros): Silero was 40 % of a media worker's CPU, half of it on silence.
 */
const QUIET_MS_SCORED = 250;

/** What a provider implements for one stream. */
export interface FrameScorer {
  /** Speech probability 0..1 of one frame of exactly `frameSamples` samples. */
  probability(frame: Int16Array): Promise<number> | number;
  reset(): void;
  close(): void;
}

export class FramedVadStream implements VadStream {
  readonly #scorer: FrameScorer;
  readonly #framer: PcmFramer;
  readonly #frameMs: number;
  readonly #segmenter: Segmenter;
  readonly #minDbfs: number;
  #positionMs = 0;
  #chain: Promise<unknown> = Promise.resolve();
  #closed = false;
  /** Bumped by reset(): frames of a push that straddles a reset are discarded. */
  #epoch = 0;
  /** Quiet frames in a row; past `#quietScored` the model rests. */
  #quietRun = 0;
  readonly #quietScored: number;
  /** Frames given to the model (tests check that silence is skipped). */
  scored = 0;

  constructor(scorer: FrameScorer, frameSamples: number, opts: VadStreamOptions) {
    this.#scorer = scorer;
    this.#framer = new PcmFramer(frameSamples);
    this.#frameMs = (frameSamples * 1000) / SAMPLE_RATE;
    this.#segmenter = new Segmenter(opts);
    this.#minDbfs = opts.minDbfs ?? DEFAULT_MIN_DBFS;
    this.#quietScored = Math.ceil(QUIET_MS_SCORED / this.#frameMs);
  }

  get inSpeech(): boolean {
    return this.#segmenter.inSpeech;
  }

  push(pcm16k: Int16Array): Promise<VadEvent[]> {
    if (this.#closed) return Promise.resolve([]);
    // Frame synchronously so chunk order is kept even if the caller does not await.
    const frames = this.#framer.push(pcm16k);
    const epoch = this.#epoch;
    const run = this.#chain.then(() => this.#score(frames, epoch));
    this.#chain = run.catch(() => undefined);
    return run;
  }

  async #score(frames: Int16Array[], epoch: number): Promise<VadEvent[]> {
    const events: VadEvent[] = [];
    for (const frame of frames) {
      if (this.#closed || epoch !== this.#epoch) return [];
      const quiet = dbfs(frame) < this.#minDbfs;
      if (quiet) this.#quietRun++;
      else if (this.#quietRun > this.#quietScored) {
        // The model rested through a long pause: it starts again as on a new stream.
        this.#scorer.reset();
        this.#quietRun = 0;
      } else this.#quietRun = 0;
      let p = 0;
      if (this.#quietRun <= this.#quietScored) {
        // Quiet frames at the start of a pause still go through the model, so its state follows.
        this.scored++;
        p = await this.#scorer.probability(frame);
        if (this.#closed || epoch !== this.#epoch) return [];
      }
      this.#segmenter.frame(quiet ? 0 : p, this.#positionMs, this.#frameMs, events);
      this.#positionMs += this.#frameMs;
    }
    return events;
  }

  reset(): void {
    this.#epoch++;
    this.#framer.reset();
    this.#segmenter.reset();
    this.#scorer.reset();
    this.#quietRun = 0;
    this.#positionMs = 0;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#epoch++;
    this.#framer.reset();
    // Let an in-flight model run finish before the scorer frees its buffers.
    void this.#chain.then(() => this.#scorer.close());
  }
}
