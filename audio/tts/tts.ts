/**
 * @module Text-to-speech: the interface every provider implements (the providers are in
 * `providers/`, one folder per vendor). A provider either streams container bytes to the caller
 * (`synthesis: 'stream'`), or is the embedded espeak-ng that the media worker speaks with itself
 * (`synthesis: 'media-worker'`: only the text goes to the worker, Opus comes back). Aborting the
 * signal stops synthesis (cancels the HTTP request, or the worker's job) at once.
 */
import type { EspeakVoice } from './espeak-wasm.ts';

/**
 * What `synthesize` yields. `wav` and `pcm` are converted in-process (no ffmpeg); the compressed
 * containers go through one ffmpeg per utterance.
 */
export type TtsOutputFormat =
  | { container: 'wav' }
  | { container: 'pcm'; sampleRate: number }
  | { container: 'mp3' | 'ogg' | 'aac' | 'flac' };

/** A provider whose bytes come to the caller's thread (a remote service). */
export interface StreamingTts {
  readonly name: string;
  readonly synthesis: 'stream';
  /** Container of the bytes `synthesize` yields. */
  readonly outputFormat: TtsOutputFormat;
  /** Streams the spoken `text` as container bytes (see `outputFormat`). */
  synthesize(text: string, opts: { signal: AbortSignal }): AsyncIterable<Buffer>;
  close(): Promise<void>;
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
