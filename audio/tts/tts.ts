/**
 * @module Text-to-speech: the interface every provider implements (the providers are in
 * `providers/`, one folder per vendor). A provider either streams container bytes to the caller
 * (`synthesis: 'stream'`), or is the embedded espeak-ng that the media worker speaks with itself
 * (`synthesis: 'media-worker'`: only the text goes to the worker, Opus comes back). Aborting the
 * signal stops synthesis (cancels the HTTP request, the vendor's session, or the worker's job) at
 * once.
 *
 * Two ways in for a remote provider. `synthesize` takes one whole text (a sentence cut by the turn,
 * an apology, a pushed message); every remote provider has it. A bidirectional vendor ("双流式")
 * also has `openTextStream`: one session per answer, the model's text pushed in pieces as it is
 * written (no wait for a sentence end), audio and the vendor's sentence marks streamed back as
 * they are made. The turn picks the path by this capability (`canStreamText`), never by the
 * provider's name. Such a provider's `synthesize` is one text stream with the whole text pushed
 * and finished (`synthesizeAsOneStream`), so the per-sentence paths work with it unchanged.
 */
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import type { EspeakVoice } from './espeak-wasm.ts';

/**
 * What `synthesize` yields. `wav` and `pcm` need no process (a `pcm` at another rate than the
 * downlink's is resampled in the media worker); the compressed containers go through one ffmpeg
 * per utterance.
 */
export type TtsOutputFormat =
  | { container: 'wav' }
  | { container: 'pcm'; sampleRate: number }
  | { container: 'mp3' | 'ogg' | 'aac' | 'flac' };

/** A provider whose bytes come to the caller's thread (a remote service). */
export interface StreamingTts {
  readonly name: string;
  readonly synthesis: 'stream';
  /** Container of the bytes `synthesize` and a text stream yield. */
  readonly outputFormat: TtsOutputFormat;
  /** Streams the spoken `text` as container bytes (see `outputFormat`). */
  synthesize(text: string, opts: { signal: AbortSignal }): AsyncIterable<Buffer>;
  /** Present on bidirectional vendors: one session per answer (see `TtsTextStream`). */
  openTextStream?(opts: TtsTextStreamOptions): TtsTextStream;
  close(): Promise<void>;
}

export interface TtsTextStreamOptions {
  /**
   * Cancels the session: the provider tells the vendor (cancel, or closes its socket) at once,
   * yields nothing more, and `events` ends with an Aborted VoiceError.
   */
  signal: AbortSignal;
  /** The session's logger: the vendor's session id and timings at debug, failures at warn. */
  log: Logger;
}

/** What a text stream yields, in the order the vendor sent it. */
export type TtsStreamEvent =
  /**
   * The vendor starts speaking this text (its own sentence grouping): the audio after this mark,
   * up to the next one, is this sentence's. Vendors that confirm no text send no marks.
   */
  | { type: 'sentence'; text: string }
  /** Audio bytes in the provider's `outputFormat`, as they arrive (any size, not frame-aligned). */
  | { type: 'audio'; data: Buffer };

/**
 * One answer being synthesised. Opened when the answer's first text is ready; text is pushed as
 * the model writes it (fragments of any length; the vendor groups them into sentences). A stream
 * the provider has not connected yet keeps what is pushed and sends it once connected; the text of
 * one stream is bounded by the provider (`maxChars`), past which it is dropped with a warning.
 *
 * Failures (connection refused, an error frame or event, a dropped socket, a stall past the
 * provider's `timeoutMs`) do not throw from `push`; they make `events` throw a VoiceError
 * (`provider_unavailable`, `provider_failed`, `timeout`) after the audio that did arrive, so the
 * turn can speak its apology. `events` ends normally once the vendor has spoken everything pushed
 * before `finish`.
 */
export interface TtsTextStream {
  /** More of the answer's text, in order. Ignored after `finish` or an abort. */
  push(text: string): void;
  /** No more text: the vendor speaks what it has, then `events` ends. Idempotent. */
  finish(): void;
  /** Audio and sentence marks. Iterate it once. */
  readonly events: AsyncIterable<TtsStreamEvent>;
}

/**
 * The embedded espeak-ng, synthesised inside the session's media worker (`SessionMedia.speak`).
 * `voice` is what the media workers load (`MediaThreadConfig.espeak`).
 */
export interface MediaWorkerTts {
  readonly name: string;
  readonly synthesis: 'media-worker';
  readonly voice: EspeakVoice;
  close(): Promise<void>;
}

export type Tts = StreamingTts | MediaWorkerTts;

/** A provider that takes text in pieces. */
export type TextStreamingTts = StreamingTts & Required<Pick<StreamingTts, 'openTextStream'>>;

export function canStreamText(tts: Tts): tts is TextStreamingTts {
  return tts.synthesis === 'stream' && typeof tts.openTextStream === 'function';
}

/**
 * The whole-text path of a bidirectional provider: one text stream with `text` pushed at once and
 * finished; its audio, without the marks. `log` is the provider's own.
 */
export async function* synthesizeAsOneStream(
  tts: TextStreamingTts,
  text: string,
  opts: { signal: AbortSignal },
  log: Logger,
): AsyncGenerator<Buffer> {
  if (opts.signal.aborted) throw new VoiceError(ErrorCode.Aborted, 'aborted', { cause: opts.signal.reason });
  const stream = tts.openTextStream({ signal: opts.signal, log });
  stream.push(text);
  stream.finish();
  for await (const event of stream.events) if (event.type === 'audio') yield event.data;
}
