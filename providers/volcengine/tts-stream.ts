/**
 * @module One answer synthesised as one vendor session (`TtsTextStream`), on a connection the
 * provider lends it (`ConnectionLender`: a kept-alive one, or a new one):
 *
 *   (connection ready) ─► StartSession ◄─ SessionStarted ─► TaskRequest per push ─► FinishSession
 *     ◄─ per sentence: TTSSentenceStart (a mark), TTSResponse… (audio), TTSSentenceEnd ◄─ SessionFinished
 *
 * Text pushed before SessionStarted is kept (bounded with all the answer's text by `maxChars`)
 * and sent at once when it comes. An abort sends CancelSession once the session has started (the
 * connection is lent again after the vendor confirms), or drops a connection still starting.
 * Every frame is decoded with caps, its JSON validated, and the number of frames, the audio and a
 * sentence's text are bounded; anything else fails the answer after the audio that did arrive.
 */
import { randomUUID } from 'node:crypto';
import type { TtsStreamEvent, TtsTextStream, TtsTextStreamOptions } from '../../audio/tts/tts.ts';
import { watchStart, type StartWatch } from '../../core/abort.ts';
import { AsyncQueue } from '../../core/async-queue.ts';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import type { EventFrame } from './frames.ts';
import type { ConnectionUser, VolcengineTtsConnection } from './tts-connection.ts';
import {
  payloadJson,
  startSessionPayload,
  STATUS_OK,
  taskRequestPayload,
  TtsEvent,
  TtsSentenceStartSchema,
  TtsStatusSchema,
} from './tts-messages.ts';
import type { VolcengineTtsOptions } from './tts-options.ts';
import { vendorError } from './vendor-error.ts';

/** What the vendor can make one answer hold or do. */
export const VOLCENGINE_TTS_LIMITS = {
  /** Frames one session may send (a 20-minute answer in 40 ms frames is 30,000). */
  maxFrames: 40_000,
  /** Audio one session may send, in ms at the asked rate (a runaway bound; `maxChars` is the real one). */
  maxAudioMs: 20 * 60_000,
  /** Longest sentence mark, in characters. */
  maxSentenceChars: 4000,
  /** Longest wait for the vendor to confirm a cancel before the connection is dropped instead of kept, ms. */
  maxCancelWaitMs: 3000,
} as const;

/** How a stream gets its connection and gives it back. */
export interface ConnectionLender {
  /** A started idle connection (`reused`), or a new one. */
  lend(): { conn: VolcengineTtsConnection; reused: boolean };
  /** The session is over: keep the connection for the next answer when `reusable`, else close it. */
  giveBack(conn: VolcengineTtsConnection, reusable: boolean): void;
  /** The session was cancelled: keep the connection once the vendor confirms, else drop it. */
  giveBackCancelled(conn: VolcengineTtsConnection, sessionId: string): void;
}

type Item = TtsStreamEvent | { type: 'failed'; error: VoiceError };
type Phase = 'connecting' | 'starting' | 'started' | 'ended';
type Frame = Extract<EventFrame, { kind: 'event' }>;

export class VolcengineTtsStream implements TtsTextStream, ConnectionUser {
  readonly events: AsyncIterable<TtsStreamEvent>;
  readonly #o: VolcengineTtsOptions;
  readonly #reqParams: Record<string, unknown>;
  readonly #marks: boolean;
  readonly #lender: ConnectionLender;
  readonly #log: Logger;
  readonly #onEnd: (stream: VolcengineTtsStream) => void;
  readonly #watch: StartWatch;
  readonly #sessionId = randomUUID();
  readonly #queue = new AsyncQueue<Item>();
  readonly #maxAudioBytes: number;
  #phase: Phase = 'connecting';
  #conn: VolcengineTtsConnection | undefined;
  #reused = false;
  #retried = false;
  #pending: string[] = [];
  #chars = 0;
  #dropped = 0;
  #finishAsked = false;
  #finishSent = false;
  #frames = 0;
  #audioBytes = 0;
  #firstPushAt: number | undefined;
  #silenceTimer: NodeJS.Timeout | undefined;

  /** `onEnd`: called once when the stream has ended (its owner forgets it). */
  constructor(
    o: VolcengineTtsOptions,
    reqParams: Record<string, unknown>,
    marks: boolean,
    lender: ConnectionLender,
    opts: TtsTextStreamOptions,
    onEnd: (stream: VolcengineTtsStream) => void,
  ) {
    this.#o = o;
    this.#reqParams = reqParams;
    this.#marks = marks;
    this.#lender = lender;
    this.#log = opts.log;
    this.#onEnd = onEnd;
    this.#maxAudioBytes = Math.round((VOLCENGINE_TTS_LIMITS.maxAudioMs / 1000) * o.sampleRate * 2);
    this.events = this.#iterate();
    this.#watch = watchStart(opts.signal, {
      startTimeoutMs: o.connectTimeoutMs,
      timeoutMessage: `volcengine tts: no SessionStarted within ${o.connectTimeoutMs} ms`,
      onAbort: (reason) => this.#cancel(reason),
      onTimeout: (error) => this.#fail(error),
    });
    if (this.#watch.arm()) this.#connect();
  }

  /** True once the stream has its outcome (finished, failed or cancelled). */
  get ended(): boolean {
    return this.#phase === 'ended';
  }

  push(text: string): void {
    if (this.#phase === 'ended' || this.#finishAsked || text.length === 0) return;
    this.#firstPushAt ??= performance.now();
    const room = this.#o.maxChars - this.#chars;
    if (text.length > room) {
      if (this.#dropped === 0)
        this.#log.warn(
          { maxChars: this.#o.maxChars },
          'volcengine tts: the answer is longer than tts.maxChars, dropping the rest',
        );
      this.#dropped += text.length - Math.max(0, room);
      if (room <= 0) return;
      text = text.slice(0, room);
    }
    this.#chars += text.length;
    if (this.#phase === 'started') this.#send(TtsEvent.TaskRequest, taskRequestPayload(this.#reqParams, text));
    else this.#pending.push(text);
  }

  finish(): void {
    if (this.#finishAsked) return;
    this.#finishAsked = true;
    if (this.#dropped > 0) this.#log.warn({ droppedChars: this.#dropped }, 'volcengine tts text dropped');
    if (this.#phase === 'started') this.#sendFinish();
  }

  /** Ends the stream as if its signal had aborted (the provider is closing). */
  cancel(): void {
    this.#cancel('the synthesiser was closed');
  }

  onFrame(frame: Frame): void {
    if (this.#phase === 'ended') return;
    // Counted before the id check: frames for other sessions cost as much.
    if (++this.#frames > VOLCENGINE_TTS_LIMITS.maxFrames) {
      this.#fail(this.#protocolError(`more than ${VOLCENGINE_TTS_LIMITS.maxFrames} frames in one answer`));
      return;
    }
    if (frame.id !== this.#sessionId) return;
    if (this.#finishSent) this.#armSilence();
    switch (frame.event) {
      case TtsEvent.SessionStarted:
        this.#onStarted();
        return;
      case TtsEvent.SentenceStart:
        this.#onSentence(frame.payload);
        return;
      case TtsEvent.Response:
        this.#onAudio(frame);
        return;
      case TtsEvent.SessionFinished: {
        const status = this.#status(frame.payload);
        if (!status) return;
        if (status.status_code !== undefined && status.status_code !== STATUS_OK) {
          this.#fail(vendorError(status.status_code, status.message ?? 'session finished with an error'), true);
          return;
        }
        this.#finished();
        return;
      }
      case TtsEvent.SessionFailed: {
        const status = this.#status(frame.payload);
        if (!status) return;
        this.#fail(vendorError(status.status_code ?? 0, status.message ?? 'session failed'));
        return;
      }
      case TtsEvent.SessionCanceled:
        this.#fail(this.#protocolError('the vendor cancelled the session'));
        return;
      default:
        // TTSSentenceEnd, TTSSubtitle and events this client does not use.
        return;
    }
  }

  onConnectionEnd(error: VoiceError): void {
    if (this.#phase === 'ended') return;
    this.#conn = undefined;
    // A kept-alive connection the vendor had dropped while idle: one more try on a new one.
    if (this.#reused && !this.#retried && this.#phase !== 'started') {
      this.#retried = true;
      this.#log.debug({ err: error.message }, 'volcengine tts: the kept connection had ended, opening a new one');
      this.#phase = 'connecting';
      this.#connect();
      return;
    }
    this.#fail(error);
  }

  #connect(): void {
    const { conn, reused } = this.#lender.lend();
    this.#conn = conn;
    this.#reused = reused;
    conn.attach(this);
    conn.ready.then(
      () => {
        if (this.#conn !== conn || this.#phase !== 'connecting') return;
        this.#phase = 'starting';
        this.#log.debug({ sessionId: this.#sessionId, connectId: conn.connectId, reused }, 'volcengine tts session');
        conn.send(TtsEvent.StartSession, this.#sessionId, startSessionPayload(this.#reqParams));
      },
      () => {}, // the connection tells this stream through onConnectionEnd
    );
  }

  #onStarted(): void {
    if (this.#phase !== 'starting') return;
    this.#phase = 'started';
    this.#watch.started();
    if (this.#pending.length > 0) {
      this.#send(TtsEvent.TaskRequest, taskRequestPayload(this.#reqParams, this.#pending.join('')));
      this.#pending = [];
    }
    if (this.#finishAsked) this.#sendFinish();
  }

  #onSentence(payload: Buffer): void {
    if (!this.#marks) return;
    const parsed = TtsSentenceStartSchema.safeParse(payloadJson(payload));
    if (!parsed.success) {
      this.#fail(this.#protocolError('a sentence start that does not match the protocol'));
      return;
    }
    const text = parsed.data.text ?? parsed.data.res_params?.text ?? '';
    if (text.length > VOLCENGINE_TTS_LIMITS.maxSentenceChars) {
      this.#fail(this.#protocolError(`a sentence of ${text.length} characters`));
      return;
    }
    if (text.length > 0) this.#queue.push({ type: 'sentence', text });
  }

  #onAudio(frame: Frame): void {
    if (!frame.audio) {
      this.#fail(this.#protocolError('an audio event in a JSON response'));
      return;
    }
    if (frame.payload.length === 0) return;
    if (this.#audioBytes === 0 && this.#firstPushAt !== undefined)
      this.#log.debug({ ms: Math.round(performance.now() - this.#firstPushAt) }, 'volcengine tts first audio');
    this.#audioBytes += frame.payload.length;
    if (this.#audioBytes > this.#maxAudioBytes) {
      this.#fail(this.#protocolError(`more than ${VOLCENGINE_TTS_LIMITS.maxAudioMs / 60_000} minutes of audio`));
      return;
    }
    this.#queue.push({ type: 'audio', data: frame.payload });
  }

  /** A session status payload, or undefined after failing the stream for a malformed one. */
  #status(payload: Buffer): { status_code?: number | undefined; message?: string | undefined } | undefined {
    const parsed = TtsStatusSchema.safeParse(payloadJson(payload));
    if (parsed.success) return parsed.data;
    this.#fail(this.#protocolError('a session status that does not match the protocol'));
    return undefined;
  }

  #protocolError(message: string): VoiceError {
    return new VoiceError(ErrorCode.ProviderFailed, `volcengine tts: ${message}`, { retryable: true });
  }

  #send(event: number, payload: object): void {
    this.#conn?.send(event, this.#sessionId, payload);
  }

  #sendFinish(): void {
    if (this.#finishSent) return;
    this.#finishSent = true;
    this.#send(TtsEvent.FinishSession, {});
    this.#armSilence();
  }

  /** Once all the text is sent the vendor owes audio: a silence past `timeoutMs` fails the answer. */
  #armSilence(): void {
    if (this.#silenceTimer) {
      this.#silenceTimer.refresh();
      return;
    }
    this.#silenceTimer = setTimeout(
      () =>
        this.#fail(
          new VoiceError(ErrorCode.Timeout, `volcengine tts: nothing from the vendor for ${this.#o.timeoutMs} ms`, {
            retryable: true,
          }),
        ),
      this.#o.timeoutMs,
    );
  }

  async *#iterate(): AsyncGenerator<TtsStreamEvent> {
    try {
      for await (const item of this.#queue) {
        if (item.type === 'failed') throw item.error;
        yield item;
      }
    } finally {
      // The reader stopped early: the vendor need not speak the rest.
      if (this.#phase !== 'ended') this.#cancel('the reader stopped');
    }
  }

  /** SessionFinished: the audio is all in; the connection may serve the next answer. */
  #finished(): void {
    const conn = this.#release();
    if (!conn) return;
    this.#log.debug({ audioBytes: this.#audioBytes, frames: this.#frames }, 'volcengine tts session finished');
    this.#lender.giveBack(conn, true);
    this.#queue.close();
  }

  /** Fails the answer after what arrived; `sessionOver`: the vendor ended the session itself. */
  #fail(error: VoiceError, sessionOver = false): void {
    if (this.#phase === 'ended') return;
    const conn = this.#release();
    if (conn) {
      if (sessionOver) this.#lender.giveBack(conn, false);
      else conn.terminate();
    }
    this.#log.warn({ code: error.code, err: error.message }, 'volcengine tts failed');
    this.#queue.push({ type: 'failed', error });
    this.#queue.close();
  }

  #cancel(reason: unknown): void {
    if (this.#phase === 'ended') return;
    const started = this.#phase === 'started';
    const conn = this.#release();
    if (conn) {
      if (started) {
        conn.send(TtsEvent.CancelSession, this.#sessionId, {});
        this.#lender.giveBackCancelled(conn, this.#sessionId);
      } else conn.terminate();
    }
    this.#log.debug('volcengine tts cancelled');
    // Nothing more is yielded: what is queued is dropped.
    this.#queue.fail(new VoiceError(ErrorCode.Aborted, 'aborted', { cause: reason }));
  }

  /** Ends the stream's own holdings once; returns the connection it had, now detached. */
  #release(): VolcengineTtsConnection | undefined {
    this.#phase = 'ended';
    this.#watch.dispose();
    clearTimeout(this.#silenceTimer);
    this.#pending = [];
    const conn = this.#conn;
    this.#conn = undefined;
    conn?.detach(this);
    this.#onEnd(this);
    return conn;
  }
}
