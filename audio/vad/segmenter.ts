/**
 * @module Turns per-frame speech probabilities into speech_start / speech_end events (the
 * provider-independent part of every VAD stream). Hysteresis as in Silero's reference
 * `get_speech_timestamps`: speech starts at `threshold`, and only frames below
 * `threshold - 0.15` count towards the silence that ends it. With `pauseMs`, a shorter silence
 * inside speech is announced as a tentative `pause` (and `resume` if voice returns), so a turn
 * can start before the end of speech is certain.
 */
import type { VadEvent, VadStreamOptions } from './vad.ts';

const DEFAULT_MIN_SPEECH_MS = 250;
/** Gap between the start and the stop threshold, as in Silero's reference code. */
const HYSTERESIS = 0.15;

export class Segmenter {
  readonly #threshold: number;
  readonly #negThreshold: number;
  readonly #minSilenceMs: number;
  readonly #minSpeechMs: number;
  readonly #padMs: number;
  /** 0: no pause events. */
  readonly #pauseMs: number;
  #inSpeech = false;
  /** A `pause` was emitted for the current silent run. */
  #paused = false;
  /** Start (ms) of a candidate segment not yet confirmed by minSpeechMs of voice. */
  #candidateStart: number | undefined;
  #candidateVoicedMs = 0;
  /** Start (ms) of the current silence run inside speech or a candidate. */
  #silenceStart: number | undefined;
  #lastEndMs = 0;

  constructor(opts: VadStreamOptions) {
    this.#threshold = opts.threshold;
    this.#negThreshold = Math.max(0.01, opts.threshold - HYSTERESIS);
    this.#minSilenceMs = opts.minSilenceMs;
    this.#minSpeechMs = opts.minSpeechMs ?? DEFAULT_MIN_SPEECH_MS;
    this.#padMs = opts.speechPadMs ?? 0;
    const pause = opts.pauseMs ?? 0;
    this.#pauseMs = pause > 0 && pause < this.#minSilenceMs ? pause : 0;
  }

  get inSpeech(): boolean {
    return this.#inSpeech;
  }

  /** Feeds one frame [startMs, startMs + frameMs) with speech probability `p`. */
  frame(p: number, startMs: number, frameMs: number, out: VadEvent[]): void {
    const endMs = startMs + frameMs;
    const voiced = p >= this.#threshold;
    const unvoiced = p < this.#negThreshold;
    if (!this.#inSpeech) {
      if (this.#candidateStart === undefined) {
        if (!voiced) return;
        this.#candidateStart = startMs;
        this.#candidateVoicedMs = 0;
        this.#silenceStart = undefined;
      }
      if (voiced) {
        this.#candidateVoicedMs += frameMs;
        this.#silenceStart = undefined;
      } else if (unvoiced) {
        this.#silenceStart ??= startMs;
        // A burst that falls silent before it is long enough was a click or a cough.
        if (endMs - this.#silenceStart >= Math.min(this.#minSilenceMs, 2 * this.#minSpeechMs)) {
          this.#candidateStart = undefined;
          this.#silenceStart = undefined;
          return;
        }
      }
      if (this.#candidateVoicedMs >= this.#minSpeechMs) {
        this.#inSpeech = true;
        const at = Math.max(this.#lastEndMs, this.#candidateStart - this.#padMs, 0);
        this.#candidateStart = undefined;
        out.push({ type: 'speech_start', atMs: at });
      }
      return;
    }
    if (voiced) {
      this.#silenceStart = undefined;
      if (this.#paused) {
        this.#paused = false;
        out.push({ type: 'resume', atMs: startMs });
      }
    } else if (unvoiced) {
      this.#silenceStart ??= startMs;
      const silentMs = endMs - this.#silenceStart;
      if (silentMs >= this.#minSilenceMs) {
        const at = Math.min(this.#silenceStart + this.#padMs, endMs);
        this.#inSpeech = false;
        this.#paused = false;
        this.#silenceStart = undefined;
        this.#lastEndMs = at;
        out.push({ type: 'speech_end', atMs: at });
      } else if (this.#pauseMs > 0 && !this.#paused && silentMs >= this.#pauseMs) {
        this.#paused = true;
        out.push({ type: 'pause', atMs: this.#silenceStart });
      }
    }
  }

  reset(): void {
    this.#inSpeech = false;
    this.#paused = false;
    this.#candidateStart = undefined;
    this.#candidateVoicedMs = 0;
    this.#silenceStart = undefined;
    this.#lastEndMs = 0;
  }
}
