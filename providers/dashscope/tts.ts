/**
 * @module Alibaba Cloud's CosyVoice, a bidirectional streaming TTS ("双流式") over DashScope's
 * WebSocket inference protocol: one task per answer (`task.ts`), the model's text pushed as it is
 * written, audio (raw PCM at the downlink's rate by default) and the service's sentence marks
 * streamed back. Connections are pooled across answers (`pool.ts`). Runs in the caller's thread:
 * it is socket I/O, and PCM needs no decoding.
 */
import {
  synthesizeAsOneStream,
  type StreamingTts,
  type TtsOutputFormat,
  type TtsTextStream,
  type TtsTextStreamOptions,
} from '../../audio/tts/tts.ts';
import type { Logger } from '../../core/logger.ts';
import { DashscopePool } from './pool.ts';
import { CosyVoiceTask } from './task.ts';
import type { CosyVoiceTtsOptions } from './tts-options.ts';

function formatOf(o: CosyVoiceTtsOptions): TtsOutputFormat {
  switch (o.format) {
    case 'pcm':
      return { container: 'pcm', sampleRate: o.sampleRate };
    case 'mp3':
      return { container: 'mp3' };
    case 'opus':
      return { container: 'ogg' };
  }
}

export class CosyVoiceTts implements StreamingTts {
  readonly name = 'cosyvoice';
  readonly synthesis = 'stream';
  readonly outputFormat: TtsOutputFormat;
  readonly #o: CosyVoiceTtsOptions;
  readonly #log: Logger;
  readonly #pool: DashscopePool;
  /** Answers not ended yet, cancelled by `close`. */
  readonly #live = new Set<CosyVoiceTask>();

  constructor(o: CosyVoiceTtsOptions, log: Logger) {
    this.#o = o;
    this.#log = log;
    this.outputFormat = formatOf(o);
    this.#pool = new DashscopePool(o, log);
  }

  openTextStream(opts: TtsTextStreamOptions): TtsTextStream {
    const task = new CosyVoiceTask(this.#o, this.#pool, opts, (ended) => this.#live.delete(ended));
    // A task that ended in its constructor (an aborted signal) has already said so.
    if (!task.ended) this.#live.add(task);
    return task;
  }

  synthesize(text: string, opts: { signal: AbortSignal }): AsyncIterable<Buffer> {
    return synthesizeAsOneStream(this, text, opts, this.#log);
  }

  /** Connections parked for the next answer (tests). */
  get parkedConnections(): number {
    return this.#pool.parked;
  }

  async close(): Promise<void> {
    for (const task of [...this.#live]) task.cancel();
    this.#pool.close();
  }
}
