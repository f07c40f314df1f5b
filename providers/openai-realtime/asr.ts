/**
 * @module The streaming recogniser over OpenAI's Realtime API in a transcription session (OpenAI,
 * Azure OpenAI, or a self-hosted server speaking the same events), through the openai SDK's own
 * WebSocket client. One connection per utterance (`stream.ts`): a session could carry several
 * utterances, but a connection held per device for its whole life would cost every idle device a
 * socket at the vendor (which cuts sessions after 60 minutes anyway), and the connect happens while
 * the user is still speaking, so it adds nothing to the answer's latency. It runs where it is
 * called (the main thread): socket I/O, and resampling that costs a fraction of a percent of a core.
 */
import type { Logger } from '../../core/logger.ts';
import { transcribeAsOneStream, type Asr, type AsrStream, type AsrStreamOptions } from '../../audio/asr/asr.ts';
import { realtimeConnector, type RealtimeConnector } from './connect.ts';
import type { OpenAiRealtimeAsrOptions } from './options.ts';
import { RealtimeTranscriptionStream } from './stream.ts';

/** Largest frame the server may send: a transcription session's events are short JSON (a delta, a transcript, the session). */
export const MAX_FRAME_BYTES = 256 * 1024;

export class OpenAiRealtimeAsr implements Asr {
  readonly name = 'openai-realtime';
  readonly #opts: OpenAiRealtimeAsrOptions;
  readonly #log: Logger;
  readonly #connect: RealtimeConnector;
  /** Streams not yet settled, cut when the recogniser closes. */
  readonly #live = new Set<RealtimeTranscriptionStream>();

  /** Throws a ConfigInvalid VoiceError when `ca` cannot be read. */
  constructor(opts: OpenAiRealtimeAsrOptions, log: Logger) {
    this.#opts = opts;
    this.#log = log;
    this.#connect = realtimeConnector(
      { ...opts, maxPayload: MAX_FRAME_BYTES, setting: 'asr' },
      { intent: 'transcription' },
    );
  }

  openStream(opts: AsrStreamOptions): AsrStream {
    const stream = new RealtimeTranscriptionStream(opts, {
      connect: this.#connect,
      settings: { model: this.#opts.model, language: this.#opts.language, prompt: this.#opts.prompt },
      finalTimeoutMs: this.#opts.finalTimeoutMs,
      connectTimeoutMs: this.#opts.connectTimeoutMs,
      onEnd: (s) => this.#live.delete(s),
    });
    // A stream can settle inside its constructor (an aborted signal): only a live one is kept.
    if (!stream.settled) this.#live.add(stream);
    return stream;
  }

  /** The batch path (a fallback, a typed test): one stream with the whole utterance. */
  transcribe(pcm: Int16Array, opts: { signal: AbortSignal; sampleRate: number }): Promise<string> {
    return transcribeAsOneStream(this, pcm, opts, this.#log);
  }

  async close(): Promise<void> {
    for (const s of [...this.#live]) s.cancel();
  }
}
