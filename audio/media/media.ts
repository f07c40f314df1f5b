/**
 * @module The per-session media work as one interface, wherever it runs: Opus decode + VAD for
 * the uplink, Opus encode (with PCM framing) and embedded-TTS synthesis for the downlink. The
 * engine runs it in a pool of worker threads (each session pinned to one worker, which holds its
 * codec and VAD state) or, with `workers: 0`, in the calling thread. Both run the same code
 * (`media-core.ts`), so they give bit-identical results.
 */
import type { VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import type { WorkerObserver } from '../../core/worker-rpc.ts';
import type { OpusSampleRate } from '../opus/codec.ts';
import type { EspeakVoice } from '../tts/espeak-wasm.ts';
import type { VadEvent, VadProvider, VadStreamOptions } from '../vad/vad.ts';

/** The uplink is always decoded at 16 kHz in 60 ms frames: what VAD and the recognisers want. */
export const UPLINK_SAMPLE_RATE = 16000;
export const FRAME_MS = 60;

/**
 * Audio that `SessionMedia.encode` turns into downlink Opus: raw PCM (s16le mono) at any rate,
 * a 16-bit PCM WAV stream, or Ogg/Opus (RFC 7845, channel mapping family 0: what OpenAI's `opus`
 * and Volcengine's `ogg_opus` are). Compressed formats other than Opus go through ffmpeg first.
 */
export type DownlinkFormat = { container: 'pcm'; sampleRate: number } | { container: 'wav' } | { container: 'ogg' };

/** One uplink packet, processed. */
export interface UplinkResult {
  /** Decoded PCM at 16 kHz (silence for a DTX or corrupt packet, so timing is kept). */
  pcm: Int16Array;
  /** VAD boundaries this packet completed (positions since the last `resetVad`). */
  events: VadEvent[];
  /** The packet could not be decoded. */
  corrupt: boolean;
}

export interface SessionMediaOptions {
  vad: VadStreamOptions;
  downlinkSampleRate: OpusSampleRate;
  /** Opus encoder complexity 0..10. */
  complexity: number;
}

/** The media state of one session. Calls of each kind are processed in order. */
export interface SessionMedia {
  readonly uplinkSampleRate: number;
  /** Samples in one uplink frame (960). */
  readonly uplinkFrameSamples: number;
  /** Decodes one Opus packet and runs the VAD on it. */
  uplink(packet: Uint8Array): Promise<UplinkResult>;
  /** Forgets the VAD state (a new utterance); ordered after every `uplink` already called. */
  resetVad(): void;
  /**
   * Audio → Opus packets at the downlink rate (the last frame padded). Pull-based. `format`: what
   * `audio` holds, by default PCM at the downlink rate; with another format its chunks are bytes
   * as they came (a chunk may split a sample, a header or a page) and the decoding, resampling
   * and framing run where the encoder lives, never in the caller's thread. Bytes that cannot be
   * read fail the stream with a `bad_input` VoiceError (the session's media state is unharmed).
   */
  encode(
    audio: AsyncIterable<Int16Array | Uint8Array>,
    signal: AbortSignal,
    format?: DownlinkFormat,
  ): AsyncIterable<Buffer>;
  /**
   * Text → Opus packets with the embedded TTS (espeak-ng), synthesised where the codec lives.
   * `urgent` marks the first sentence of a turn: a worker serves those before sentences that are
   * only synthesised ahead, so when many turns start at once each gets its first audio early.
   * `voice`: the voice to speak with (each agent may have its own); default the thread's
   * (`MediaThreadConfig.espeak`). An unknown voice fails the request with `config_invalid`.
   */
  speak(text: string, signal: AbortSignal, urgent?: boolean, voice?: EspeakVoice): AsyncIterable<Buffer>;
  /**
   * While held, the session's answer is prepared but not played (an early start waiting for the
   * end of speech): beyond each sentence's first slice its synthesis is not due, so a worker does
   * it only when nothing else is. Releasing starts the answer's clock: the pacer starts now.
   */
  holdPlayback(held: boolean): void;
  /** `cb` runs once if this session's media state is lost (its worker died): end the session. */
  onLost(cb: (err: VoiceError) => void): void;
  close(): void;
}

export interface MediaEngineStats {
  /** Worker threads running (0: media runs in the calling thread). */
  workers: number;
  sessions: number;
  /** Requests sent to workers and not answered yet, summed over workers (admission control). */
  queueDepth: number;
  /** Workers that died and were replaced since start. */
  workerRestarts: number;
}

export interface MediaEngine {
  open(opts: SessionMediaOptions, log: Logger): Promise<SessionMedia>;
  stats(): MediaEngineStats;
  close(): Promise<void>;
}

export type EspeakEngineChoice = 'auto' | 'native' | 'wasm';

/** What every thread that runs media work loads once. */
export interface MediaThreadConfig {
  vadProvider: VadProvider;
  /** The embedded TTS voice (the configured espeak voice, or the fallback's). */
  espeak: EspeakVoice;
  /**
   * Which espeak-ng runs the embedded TTS (`audio.espeakEngine`): `native`, the Debian library in
   * one helper process per thread (about 5× cheaper); `wasm`, the WebAssembly build inside the
   * thread; `auto` (default), native when its helper is built, else WASM.
   */
  espeakEngine?: EspeakEngineChoice;
  /**
   * Audio the pacer keeps queued on the device (`audio.sendAheadMs`): a worker encodes that much
   * of a turn's first sentence in one go, and the rest as the pacer will need it.
   * Default 600 (the configuration's default).
   */
  sendAheadMs?: number;
  /** Frames the pacer sends at once before it builds the lead up (`audio.preBufferFrames`). Default 3. */
  preBufferFrames?: number;
}

export interface MediaEngineOptions extends MediaThreadConfig {
  /** Worker threads; 0 runs media in the calling thread. */
  workers: number;
  /** Niceness of each worker thread (0..19; Linux only, ignored elsewhere). Default 0. */
  workerNice?: number;
  /** Sees each worker thread as it starts (labels `media worker <index>`). */
  onWorker?: WorkerObserver;
  log: Logger;
}
