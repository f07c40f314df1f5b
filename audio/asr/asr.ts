/**
 * @module Speech-to-text: the interfaces every recogniser implements (the providers are in
 * `providers/`, one folder per vendor).
 *
 * Two ways in. `transcribe` takes one complete utterance (as cut by the end of turn) and resolves
 * with its text ('' when nothing was recognised); every provider has it. A streaming provider also
 * has `openStream`: the utterance's audio is pushed while the user speaks, partial transcripts
 * come back as they are made (the end of turn reads them, `voice/turn-end/`), and `finish` gives
 * the final once the turn has ended, so the transcript is ready a vendor round trip after the end
 * of speech instead of an upload and a whole decode later. A streaming provider's `transcribe`
 * opens a stream, pushes everything and finishes it, so the batch paths (the fallback, a typed
 * test) work with it unchanged.
 */
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';

export interface Asr {
  readonly name: string;
  /** Transcribes one utterance of mono s16 PCM at `opts.sampleRate`. */
  transcribe(pcm: Int16Array, opts: { signal: AbortSignal; sampleRate: number }): Promise<string>;
  /** Present on streaming recognisers: one stream per utterance (see `AsrStream`). */
  openStream?(opts: AsrStreamOptions): AsrStream;
  /** Stops any process and releases resources. */
  close(): Promise<void>;
}

export interface AsrStreamOptions {
  /** Rate of the PCM that will be pushed (the uplink's, 16 kHz). */
  sampleRate: number;
  /**
   * Cancels the stream: the provider closes its connection (or drops its request) at once, sends
   * nothing more, calls no more callbacks, and a pending `finish` rejects with an Aborted error.
   */
  signal: AbortSignal;
  /**
   * The recogniser's current hypothesis of the whole utterance so far (not a delta), each time it
   * changes. Never called after `finish` resolves or the signal aborts.
   */
  onPartial(text: string): void;
  /** The session's logger: partials and finals at debug level, failures at warn. */
  log: Logger;
}

/**
 * One utterance being recognised. Opened at the VAD's speech start; the audio from the start of the
 * utterance (pre-roll included) is pushed in order as it arrives. A stream the provider has not
 * connected yet keeps what is pushed, bounded by the utterance's own bound (`vad.maxUtteranceMs`),
 * and sends it once connected.
 *
 * Failures (connection refused, an error frame, a dropped socket) do not throw from `push`; they
 * make `finish` reject with a VoiceError (`provider_unavailable`, `provider_failed`, `timeout`),
 * and the caller falls back to the batch path. `finish` resolves or rejects within the provider's
 * bounded wait for a final (its options' `finalTimeoutMs`), however the vendor behaves.
 */
export interface AsrStream {
  /** Audio of the utterance (mono s16 at the stream's rate), in order. Ignored after `finish`. */
  push(pcm: Int16Array): void;
  /** The utterance is over: tells the vendor so and resolves with the final transcript. Idempotent. */
  finish(): Promise<string>;
}

/** A recogniser that can stream. */
export type StreamingAsr = Asr & Required<Pick<Asr, 'openStream'>>;

export function canStream(asr: Asr): asr is StreamingAsr {
  return typeof asr.openStream === 'function';
}

/**
 * The batch path of a streaming recogniser: one stream with the whole utterance pushed at once
 * and finished (a failed stream's fallback, a typed test). `log` is the provider's own.
 */
export function transcribeAsOneStream(
  asr: StreamingAsr,
  pcm: Int16Array,
  opts: { signal: AbortSignal; sampleRate: number },
  log: Logger,
): Promise<string> {
  if (opts.signal.aborted)
    return Promise.reject(new VoiceError(ErrorCode.Aborted, 'aborted', { cause: opts.signal.reason }));
  const stream = asr.openStream({ ...opts, onPartial: () => {}, log });
  stream.push(pcm);
  return stream.finish();
}
