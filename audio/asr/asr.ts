/**
 * @module Speech-to-text: the interface every recogniser implements (the providers are in
 * `providers/`, one folder per vendor). `transcribe` takes one complete utterance (as cut by the
 * VAD) and resolves with its text ('' when nothing was recognised).
 */

export interface Asr {
  readonly name: string;
  /** Transcribes one utterance of mono s16 PCM at `opts.sampleRate`. */
  transcribe(pcm: Int16Array, opts: { signal: AbortSignal; sampleRate: number }): Promise<string>;
  /** Stops any process and releases resources. */
  close(): Promise<void>;
}
