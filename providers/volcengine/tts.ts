/**
 * @module Volcengine's (Doubao's) bidirectional streaming synthesiser ("双向流式", v3
 * `/api/v3/tts/bidirection`): each answer is one vendor session (`tts-stream.ts`) to which the
 * model's text is pushed as it is written; sentence marks and PCM come back as they are made.
 *
 * Connections are kept for the next answer (`keepAliveMs`, default 15 s): the vendor documents a
 * connection carrying sessions one after another, and reusing one saves the TLS handshake and the
 * StartConnection round trip on the next answer's first audio. One session at a time per
 * connection: answers that overlap (several devices) each get their own; at most
 * `MAX_IDLE_CONNECTIONS` wait idle, each closed after `keepAliveMs`, all closed by `close`.
 *
 * Sentence marks come from the vendor's TTSSentenceStart on the 1.0 resources (one per sentence,
 * before its audio). The 2.0 resources send one start for the whole answer and no per-sentence
 * text, so with them the stream gives no marks and the turn shows its own cut of the text.
 *
 * Runs in the caller's thread: socket I/O, no decoding (PCM is asked for at the caller's rate).
 */
import {
  synthesizeAsOneStream,
  type StreamingTts,
  type TtsOutputFormat,
  type TtsStreamEvent,
  type TtsTextStream,
  type TtsTextStreamOptions,
} from '../../audio/tts/tts.ts';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import { VolcengineTtsConnection } from './tts-connection.ts';
import { ttsReqParams } from './tts-messages.ts';
import { isModel2Resource, type VolcengineTtsOptions } from './tts-options.ts';
import { VOLCENGINE_TTS_LIMITS, VolcengineTtsStream, type ConnectionLender } from './tts-stream.ts';

/** Idle connections kept for the next answers; more are closed as their answers end. */
export const MAX_IDLE_CONNECTIONS = 8;

function formatOf(o: VolcengineTtsOptions): TtsOutputFormat {
  if (o.format === 'mp3') return { container: 'mp3' };
  if (o.format === 'ogg_opus') return { container: 'ogg' };
  return { container: 'pcm', sampleRate: o.sampleRate };
}

export class VolcengineTts implements StreamingTts, ConnectionLender {
  readonly name = 'volcengine';
  readonly synthesis = 'stream';
  readonly outputFormat: TtsOutputFormat;
  readonly #o: VolcengineTtsOptions;
  readonly #log: Logger;
  readonly #reqParams: Record<string, unknown>;
  readonly #marks: boolean;
  /** Every open connection, lent or idle. */
  readonly #connections = new Set<VolcengineTtsConnection>();
  /** Idle connections, oldest first, with the timer that closes each. */
  readonly #idle = new Map<VolcengineTtsConnection, NodeJS.Timeout>();
  readonly #live = new Set<VolcengineTtsStream>();
  #closed = false;

  constructor(o: VolcengineTtsOptions, log: Logger) {
    this.#o = o;
    this.#log = log;
    this.outputFormat = formatOf(o);
    this.#reqParams = ttsReqParams(o);
    this.#marks = !isModel2Resource(o.resourceId);
  }

  openTextStream(opts: TtsTextStreamOptions): TtsTextStream {
    if (this.#closed) return closedStream();
    const stream = new VolcengineTtsStream(this.#o, this.#reqParams, this.#marks, this, opts, (ended) =>
      this.#live.delete(ended),
    );
    // A stream that ended in its constructor (an aborted signal) has already said so.
    if (!stream.ended) this.#live.add(stream);
    return stream;
  }

  synthesize(text: string, opts: { signal: AbortSignal }): AsyncIterable<Buffer> {
    return synthesizeAsOneStream(this, text, opts, this.#log);
  }

  /** Open connections (lent or idle), for tests and metrics. */
  get openConnections(): number {
    return this.#connections.size;
  }

  lend(): { conn: VolcengineTtsConnection; reused: boolean } {
    for (const [conn, timer] of this.#idle) {
      clearTimeout(timer);
      this.#idle.delete(conn);
      if (conn.usable) return { conn, reused: true };
      conn.terminate();
    }
    const conn = new VolcengineTtsConnection(this.#o, this.#log, (ended) => this.#forget(ended));
    this.#connections.add(conn);
    return { conn, reused: false };
  }

  giveBack(conn: VolcengineTtsConnection, reusable: boolean): void {
    if (!reusable || this.#closed || this.#o.keepAliveMs === 0 || !conn.usable) {
      conn.finish();
      return;
    }
    if (this.#idle.size >= MAX_IDLE_CONNECTIONS) {
      conn.finish();
      return;
    }
    const timer = setTimeout(() => {
      this.#idle.delete(conn);
      conn.finish();
    }, this.#o.keepAliveMs);
    this.#idle.set(conn, timer);
  }

  giveBackCancelled(conn: VolcengineTtsConnection, sessionId: string): void {
    const wait = Math.min(this.#o.connectTimeoutMs, VOLCENGINE_TTS_LIMITS.maxCancelWaitMs);
    void conn.drain(sessionId, wait).then((clean) => {
      if (clean) this.giveBack(conn, true);
      else conn.terminate();
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const stream of [...this.#live]) stream.cancel();
    for (const [conn, timer] of this.#idle) {
      clearTimeout(timer);
      conn.finish();
    }
    this.#idle.clear();
    // Cancelled sessions' connections wait for no confirmation once the provider is closing.
    for (const conn of [...this.#connections]) conn.terminate();
  }

  #forget(conn: VolcengineTtsConnection): void {
    this.#connections.delete(conn);
    const timer = this.#idle.get(conn);
    if (timer !== undefined) {
      clearTimeout(timer);
      this.#idle.delete(conn);
    }
  }
}

/** A stream opened after `close`: it yields nothing and fails. */
function closedStream(): TtsTextStream {
  async function* events(): AsyncGenerator<TtsStreamEvent> {
    yield* [];
    throw new VoiceError(ErrorCode.ProviderUnavailable, 'volcengine tts is closed');
  }
  return { push: () => {}, finish: () => {}, events: events() };
}
