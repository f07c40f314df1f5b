/**
 * @module Volcengine's (Doubao's) big-model streaming recogniser: each utterance is one sauc
 * WebSocket connection (`stream.ts`), opened at the speech start so the transcript is ready a
 * round trip after the end of speech. `transcribe` (the batch path) streams a whole utterance the
 * same way. Runs in the caller's thread: it is socket I/O, a gzip of a few KB per packet.
 */
import { transcribeAsOneStream, type Asr, type AsrStream, type AsrStreamOptions } from '../../audio/asr/asr.ts';
import type { Logger } from '../../core/logger.ts';
import type { VolcengineAsrOptions } from './options.ts';
import { VolcengineStream } from './stream.ts';

export class VolcengineAsr implements Asr {
  readonly name = 'volcengine';
  readonly #o: VolcengineAsrOptions;
  readonly #log: Logger;
  /** Streams not yet ended, cancelled by `close`. */
  readonly #live = new Set<VolcengineStream>();

  constructor(o: VolcengineAsrOptions, log: Logger) {
    this.#o = o;
    this.#log = log;
  }

  openStream(opts: AsrStreamOptions): AsrStream {
    const stream = new VolcengineStream(this.#o, opts, (ended) => this.#live.delete(ended));
    // A stream that ended in its constructor (an aborted signal) has already said so.
    if (!stream.ended) this.#live.add(stream);
    return stream;
  }

  transcribe(pcm: Int16Array, opts: { signal: AbortSignal; sampleRate: number }): Promise<string> {
    return transcribeAsOneStream(this, pcm, opts, this.#log);
  }

  async close(): Promise<void> {
    for (const stream of [...this.#live]) stream.cancel();
  }
}
