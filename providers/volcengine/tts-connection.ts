/**
 * @module One WebSocket to the bidirectional TTS endpoint, which may carry several sessions one
 * after another (never two at once, as the vendor documents). It authenticates in the upgrade's
 * headers, sends StartConnection and is `ready` at ConnectionStarted; after that every decoded
 * frame goes to the session attached to it (`attach`), and frames for no attached session (the
 * tail of a cancelled one) are dropped. Anything that breaks the connection (a refused handshake,
 * ConnectionFailed, a malformed or oversize frame, an error frame, a close) ends it for good:
 * `onEnd` is told, and the attached session gets the error.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import WebSocket from 'ws';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import { decodeEventFrame, encodeEventFrame, FrameError, type EventFrame } from './frames.ts';
import { readRefusal } from './refusal.ts';
import { payloadJson, TtsEvent, TtsStatusSchema } from './tts-messages.ts';
import type { VolcengineTtsOptions } from './tts-options.ts';
import { MAX_VENDOR_ERROR_CHARS, vendorError } from './vendor-error.ts';

/** What a vendor (or anything at its URL) can make one connection hold or do. */
export const VOLCENGINE_TTS_FRAME_LIMITS = {
  /**
   * Largest WebSocket message accepted (ws `maxPayload`): an audio frame is a fraction of a
   * second (a whole second of 48 kHz PCM is 96 KB).
   */
  maxFrameBytes: 1024 * 1024,
  /** Largest size a gzip payload may inflate to. */
  maxInflatedBytes: 1024 * 1024,
} as const;

/** The session using a connection: it gets the frames and the connection's end. */
export interface ConnectionUser {
  onFrame(frame: Extract<EventFrame, { kind: 'event' }>): void;
  onConnectionEnd(error: VoiceError): void;
}

/** The vendor's refusal to start a connection: an HTTP answer to the upgrade, or ConnectionFailed. */
export type ConnectionRefusal = { httpStatus: number } | { connectionFailed: number };

export class VolcengineTtsConnection {
  /** Settles at ConnectionStarted, or rejects with why the connection could not start. */
  readonly ready: Promise<void>;
  /** Settles once the socket is closed, whatever closed it. */
  readonly closed: Promise<void>;
  readonly connectId = randomUUID();
  readonly #ws: WebSocket;
  readonly #log: Logger;
  readonly #onEnd: (conn: VolcengineTtsConnection) => void;
  #user: ConnectionUser | undefined;
  #started = false;
  #ended: VoiceError | undefined;
  #resolveReady: () => void = () => {};
  #rejectReady: (err: VoiceError) => void = () => {};
  #refusal: ConnectionRefusal | undefined;
  /** A session cancelled on this connection whose end the vendor has not confirmed yet. */
  #draining: { id: string; done: (clean: boolean) => void; timer: NodeJS.Timeout } | undefined;

  /** `onEnd`: called once when the connection has ended (its owner forgets it). */
  constructor(o: VolcengineTtsOptions, log: Logger, onEnd: (conn: VolcengineTtsConnection) => void) {
    this.#log = log;
    this.#onEnd = onEnd;
    this.ready = new Promise<void>((resolve, reject) => {
      this.#resolveReady = resolve;
      this.#rejectReady = reject;
    });
    // Nobody may be waiting yet (an idle connection's failure); the error is also given to its user.
    this.ready.catch(() => {});
    const headers: Record<string, string> = {
      'X-Api-Resource-Id': o.resourceId,
      'X-Api-Connect-Id': this.connectId,
    };
    if (o.apiKey !== undefined) headers['X-Api-Key'] = o.apiKey;
    if (o.appKey !== undefined) {
      // The old console's APP ID: `X-Api-App-Key` in the first documentation, `X-Api-App-Id` in
      // the newer one; gateways take either.
      headers['X-Api-App-Key'] = o.appKey;
      headers['X-Api-App-Id'] = o.appKey;
    }
    if (o.accessKey !== undefined) headers['X-Api-Access-Key'] = o.accessKey;
    const ws = new WebSocket(o.url, {
      headers,
      maxPayload: VOLCENGINE_TTS_FRAME_LIMITS.maxFrameBytes,
      perMessageDeflate: false,
    });
    this.#ws = ws;
    this.closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
    let opened = false;
    ws.on('upgrade', (res: IncomingMessage) => {
      this.#log.debug({ connectId: this.connectId, logId: res.headers['x-tt-logid'] }, 'volcengine tts connected');
    });
    ws.on('unexpected-response', (_req, res: IncomingMessage) => {
      void readRefusal(res, MAX_VENDOR_ERROR_CHARS).then(({ status, logId, body }) => {
        const hint =
          status === 401 || status === 403
            ? ' (check tts.apiKey, or tts.appKey and tts.accessKey, and tts.resourceId)'
            : status === 404
              ? ' (check tts.url)'
              : '';
        this.#log.debug({ status, logId }, 'volcengine tts refused the connection');
        this.#refusal ??= { httpStatus: status };
        this.#end(
          new VoiceError(
            ErrorCode.ProviderUnavailable,
            `volcengine tts refused the connection: HTTP ${status}${hint}${body ? `: ${body}` : ''}`,
          ),
        );
      });
    });
    ws.on('open', () => {
      opened = true;
      ws.send(encodeEventFrame(TtsEvent.StartConnection, undefined, {}));
    });
    ws.on('message', (data: WebSocket.RawData, isBinary: boolean) => this.#onMessage(data, isBinary));
    ws.on('error', (err: Error & { code?: string }) => {
      const message =
        err.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH'
          ? `a frame over ${VOLCENGINE_TTS_FRAME_LIMITS.maxFrameBytes} bytes`
          : err.message;
      const code = opened ? ErrorCode.ProviderFailed : ErrorCode.ProviderUnavailable;
      this.#end(new VoiceError(code, `volcengine tts: ${message}`, { retryable: true, cause: err }));
    });
    ws.on('close', (code: number, reason: Buffer) => {
      const why = reason.length > 0 ? `: ${reason.toString('utf8').slice(0, MAX_VENDOR_ERROR_CHARS)}` : '';
      this.#end(
        new VoiceError(ErrorCode.ProviderFailed, `volcengine tts closed the connection (${code}${why})`, {
          retryable: true,
        }),
      );
    });
  }

  /** How the vendor refused to start this connection, if it did (the start-up check reads it). */
  get refusal(): ConnectionRefusal | undefined {
    return this.#refusal;
  }

  /** Open, started and not ended: a session may use it. */
  get usable(): boolean {
    return this.#started && !this.#ended && !this.#draining && this.#user === undefined;
  }

  /** The session that gets this connection's frames from now on (one at a time). */
  attach(user: ConnectionUser): void {
    if (this.#user) throw new Error('volcengine tts: a second session on one connection');
    this.#user = user;
    if (this.#ended) user.onConnectionEnd(this.#ended);
  }

  detach(user: ConnectionUser): void {
    if (this.#user === user) this.#user = undefined;
  }

  send(event: number, sessionId: string | undefined, payload: object): void {
    if (this.#ended || this.#ws.readyState !== WebSocket.OPEN) return;
    this.#ws.send(encodeEventFrame(event, sessionId, payload));
  }

  /**
   * After a CancelSession: resolves true once the vendor has ended that session (SessionCanceled,
   * or a SessionFinished/SessionFailed that crossed the cancel), false when it has not within
   * `ms` or the connection ended; the connection is reusable only after a true.
   */
  drain(sessionId: string, ms: number): Promise<boolean> {
    if (this.#ended) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = (clean: boolean): void => {
        if (!this.#draining) return;
        clearTimeout(this.#draining.timer);
        this.#draining = undefined;
        resolve(clean);
      };
      this.#draining = { id: sessionId, done, timer: setTimeout(() => done(false), ms) };
    });
  }

  /** Says goodbye (FinishConnection) and closes; for an idle connection no longer wanted. */
  finish(): void {
    if (this.#ended) return;
    this.send(TtsEvent.FinishConnection, undefined, {});
    this.#end(new VoiceError(ErrorCode.Aborted, 'volcengine tts connection closed'), 'close');
  }

  /**
   * Drops the connection at once (a failed or abandoned session); after a `finish` whose goodbye
   * the vendor has not answered, drops the socket still closing.
   */
  terminate(): void {
    if (this.#ended) this.#ws.terminate();
    else this.#end(new VoiceError(ErrorCode.Aborted, 'volcengine tts connection closed'));
  }

  #onMessage(data: WebSocket.RawData, isBinary: boolean): void {
    if (this.#ended) return;
    const bytes = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
    const fail = (message: string): void =>
      this.#end(new VoiceError(ErrorCode.ProviderFailed, `volcengine tts: ${message}`, { retryable: true }));
    if (!isBinary) {
      // The vendor may describe a failure in a text frame.
      fail(`a text frame: ${bytes.toString('utf8', 0, MAX_VENDOR_ERROR_CHARS)}`);
      return;
    }
    let frame: EventFrame;
    try {
      frame = decodeEventFrame(bytes, VOLCENGINE_TTS_FRAME_LIMITS.maxInflatedBytes);
    } catch (err) {
      fail(`malformed frame: ${err instanceof FrameError ? err.message : String(err)}`);
      return;
    }
    if (frame.kind === 'error') {
      this.#end(vendorError(frame.code, frame.message));
      return;
    }
    switch (frame.event) {
      case TtsEvent.ConnectionStarted:
        if (!this.#started) {
          this.#started = true;
          this.#resolveReady();
        }
        return;
      case TtsEvent.ConnectionFailed: {
        const status = TtsStatusSchema.safeParse(payloadJson(frame.payload));
        const code = status.success ? (status.data.status_code ?? 0) : 0;
        const message = status.success ? (status.data.message ?? '') : '';
        if (!this.#started) this.#refusal ??= { connectionFailed: code };
        // Refused at the start (bad credentials or resource): the connection was never usable.
        const err = vendorError(code, `connection failed${message ? `: ${message}` : ''}`);
        this.#end(
          this.#started
            ? err
            : new VoiceError(
                ErrorCode.ProviderUnavailable,
                `${err.message} (check tts.apiKey/appKey/accessKey and tts.resourceId)`,
              ),
        );
        return;
      }
      case TtsEvent.ConnectionFinished:
        fail('the vendor finished the connection');
        return;
      default:
        break;
    }
    if (!this.#started) {
      fail(`event ${frame.event} before ConnectionStarted`);
      return;
    }
    const draining = this.#draining;
    if (draining && frame.id === draining.id) {
      if (
        frame.event === TtsEvent.SessionCanceled ||
        frame.event === TtsEvent.SessionFinished ||
        frame.event === TtsEvent.SessionFailed
      )
        draining.done(true);
      return;
    }
    this.#user?.onFrame(frame);
  }

  /** Ends the connection once: tells its user and its owner; `close` says goodbye first. */
  #end(error: VoiceError, how: 'close' | 'terminate' = 'terminate'): void {
    if (this.#ended) return;
    this.#ended = error;
    this.#rejectReady(error);
    this.#draining?.done(false);
    if (how === 'close' && this.#ws.readyState === WebSocket.OPEN) this.#ws.close(1000);
    else this.#ws.terminate();
    const user = this.#user;
    this.#user = undefined;
    user?.onConnectionEnd(error);
    this.#onEnd(this);
  }
}
