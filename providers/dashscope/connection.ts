/**
 * @module One WebSocket to DashScope's inference endpoint. It carries one task at a time: whoever
 * `listen`s gets its events (validated JSON), its audio (binary frames) and its loss. Between
 * tasks the pool (`pool.ts`) parks it. Its failures before the upgrade (refused, DNS, TLS) are
 * `provider_unavailable`; a refused handshake's status and the start of its body are kept for the
 * error, with the setting to check.
 */
import type { IncomingMessage } from 'node:http';
import WebSocket from 'ws';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import { redactUrl } from '../../core/redact-url.ts';
import { DashscopeEventSchema, type DashscopeEvent } from './messages.ts';
import type { CosyVoiceTtsOptions } from './tts-options.ts';

/** What the service (or anything at its URL) can make one connection hold. */
export const DASHSCOPE_LIMITS = {
  /** Largest WebSocket message accepted (ws `maxPayload`): an audio frame is a few KB, an event less. */
  maxFrameBytes: 512 * 1024,
  /** Bytes of a refused handshake's body kept for the error message. */
  maxRefusalBodyBytes: 1024,
  /** Characters of a vendor's error text kept in our error. */
  maxErrorChars: 300,
} as const;

/** Whoever uses the connection now: one task, or the pool while it is parked. */
export interface SocketListener {
  event(event: DashscopeEvent): void;
  audio(data: Buffer): void;
  /** The connection is gone (closed, dropped, a malformed frame): nothing more comes. */
  lost(error: VoiceError): void;
}

export class DashscopeSocket {
  readonly #ws: WebSocket;
  readonly #log: Logger;
  /** Settles once: open, or why it could not open. */
  readonly ready: Promise<void>;
  #opened = false;
  #closed = false;
  #refusedStatus: number | undefined;
  #listener: SocketListener | undefined;
  #settleReady: ((error?: VoiceError) => void) | undefined;

  constructor(o: CosyVoiceTtsOptions, log: Logger) {
    this.#log = log;
    this.ready = new Promise<void>((resolve, reject) => {
      this.#settleReady = (error) => {
        this.#settleReady = undefined;
        if (error) reject(error);
        else resolve();
      };
    });
    // Nobody may be waiting yet (a task awaits it after acquiring); the rejection is read there.
    this.ready.catch(() => undefined);
    this.#ws = new WebSocket(o.url, {
      headers: {
        Authorization: `Bearer ${o.apiKey}`,
        ...(o.workspace ? { 'X-DashScope-WorkSpace': o.workspace } : {}),
      },
      maxPayload: DASHSCOPE_LIMITS.maxFrameBytes,
      perMessageDeflate: false,
      followRedirects: false,
    });
    const ws = this.#ws;
    ws.on('unexpected-response', (_req, res: IncomingMessage) => this.#refused(res));
    ws.on('open', () => {
      this.#opened = true;
      this.#log.debug({ url: redactUrl(o.url) }, 'dashscope connected');
      this.#settleReady?.();
    });
    ws.on('message', (data: WebSocket.RawData, isBinary: boolean) => this.#onMessage(data, isBinary));
    ws.on('error', (err: Error & { code?: string }) => {
      const message =
        err.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH'
          ? `a frame over ${DASHSCOPE_LIMITS.maxFrameBytes} bytes`
          : err.message;
      if (this.#opened) this.#lose(new VoiceError(ErrorCode.ProviderFailed, `dashscope: ${message}`, { cause: err }));
      else
        this.#lose(
          new VoiceError(ErrorCode.ProviderUnavailable, `dashscope: cannot connect (${message})`, {
            retryable: true,
            cause: err,
          }),
        );
    });
    ws.on('close', (code: number, reason: Buffer) => {
      const why = reason.toString('utf8', 0, DASHSCOPE_LIMITS.maxErrorChars);
      this.#lose(
        new VoiceError(
          this.#opened ? ErrorCode.ProviderFailed : ErrorCode.ProviderUnavailable,
          `dashscope closed the connection (${code}${why ? ` ${why}` : ''})`,
          { retryable: true },
        ),
      );
    });
  }

  /** Open, not closed, and nobody's. */
  get idle(): boolean {
    return this.#opened && !this.#closed && this.#listener === undefined;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** The HTTP status of a refused handshake (401/403: the key), else undefined. */
  get refusedStatus(): number | undefined {
    return this.#refusedStatus;
  }

  /** Hands the connection to `listener` (undefined: nobody's). */
  listen(listener: SocketListener | undefined): void {
    this.#listener = listener;
  }

  /** Sends a command; false when the connection is not open. */
  send(command: string): boolean {
    if (!this.#opened || this.#closed || this.#ws.readyState !== WebSocket.OPEN) return false;
    this.#ws.send(command);
    return true;
  }

  /** Stops reading (the consumer is behind): TCP's window then holds the service back. */
  pause(): void {
    if (this.#opened && !this.#closed) this.#ws.pause();
  }

  resume(): void {
    if (this.#opened && !this.#closed) this.#ws.resume();
  }

  /** Closes at once (no close handshake to wait for); the listener hears nothing more. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#listener = undefined;
    this.#settleReady?.(new VoiceError(ErrorCode.Aborted, 'dashscope: connection closed before it opened'));
    this.#ws.terminate();
  }

  #lose(error: VoiceError): void {
    if (this.#closed) return;
    this.#closed = true;
    const listener = this.#listener;
    this.#listener = undefined;
    this.#settleReady?.(error);
    this.#ws.terminate();
    listener?.lost(error);
  }

  /** The handshake got an HTTP answer instead of an upgrade: a bad key, a key of another region, a wrong URL. */
  #refused(res: IncomingMessage): void {
    const status = res.statusCode ?? 0;
    this.#refusedStatus = status;
    const chunks: Buffer[] = [];
    let bytes = 0;
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      res.destroy();
      const body = Buffer.concat(chunks).toString('utf8').slice(0, DASHSCOPE_LIMITS.maxErrorChars).trim();
      const hint =
        status === 401 || status === 403
          ? ' (check tts.apiKey: a key works only in the region of tts.url)'
          : status === 404
            ? ' (check tts.url)'
            : '';
      this.#lose(
        new VoiceError(
          ErrorCode.ProviderUnavailable,
          `dashscope refused the connection: HTTP ${status}${hint}${body ? `: ${body}` : ''}`,
          { retryable: status !== 401 && status !== 403 },
        ),
      );
    };
    res.on('data', (chunk: Buffer) => {
      if (bytes >= DASHSCOPE_LIMITS.maxRefusalBodyBytes) return;
      chunks.push(chunk.subarray(0, DASHSCOPE_LIMITS.maxRefusalBodyBytes - bytes));
      bytes += chunk.length;
      if (bytes >= DASHSCOPE_LIMITS.maxRefusalBodyBytes) finish();
    });
    res.once('end', finish);
    res.once('error', finish);
    res.once('close', finish);
  }

  #onMessage(data: WebSocket.RawData, isBinary: boolean): void {
    if (this.#closed) return;
    const bytes = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
    const listener = this.#listener;
    if (isBinary) {
      if (listener) listener.audio(bytes);
      else this.#lose(new VoiceError(ErrorCode.ProviderFailed, 'dashscope: audio with no task on the connection'));
      return;
    }
    let json: unknown;
    try {
      json = JSON.parse(bytes.toString('utf8'));
    } catch {
      this.#lose(
        new VoiceError(
          ErrorCode.ProviderFailed,
          `dashscope: a text frame that is not JSON: ${bytes.toString('utf8', 0, DASHSCOPE_LIMITS.maxErrorChars)}`,
        ),
      );
      return;
    }
    const parsed = DashscopeEventSchema.safeParse(json);
    if (!parsed.success) {
      this.#lose(
        new VoiceError(
          ErrorCode.ProviderFailed,
          `dashscope: an event that does not match the protocol (${parsed.error.issues[0]?.message ?? 'invalid'})`,
        ),
      );
      return;
    }
    if (listener) listener.event(parsed.data);
    else this.#lose(new VoiceError(ErrorCode.ProviderFailed, 'dashscope: an event with no task on the connection'));
  }
}
