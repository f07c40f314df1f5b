/**
 * @module An accepted WebSocket (a bridge that dialled in) carried as an MCP SDK `Transport`: one
 * JSON-RPC message per text frame, no envelope, so the SDK's `Client` can drive the connection
 * although the socket was opened by the other side. Frames that are not one JSON-RPC message are
 * dropped and counted (a peer sending nothing but garbage is closed); a result without an `id`
 * (some bridges answer notifications with one) is dropped silently.
 */
import type { WebSocket, RawData } from 'ws';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { JSONRPCMessageSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

export interface WebSocketPeerTransportOptions {
  /** Longest text frame accepted, in bytes; a longer one closes the socket (1009). */
  maxMessageBytes: number;
  /** Malformed frames tolerated before the socket is closed (1008). */
  maxMalformed?: number;
  /**
   * Bytes queued for a peer that does not read (a bridge flooding pings and never reading the
   * answers); past this the socket is closed (1008). Default: 4 × maxMessageBytes, at least 1 MiB.
   */
  maxBufferedBytes?: number;
  /** Told of each dropped frame (for a debug log line). */
  onDropped?: (why: string) => void;
  /**
   * After our close frame, how long the peer has to answer it before the socket is destroyed, ms
   * (default 5000). A dead peer never answers, and the socket would otherwise hold for 30 s.
   */
  closeGraceMs?: number;
}

/** Close codes this transport uses (RFC 6455). */
export const CloseCodes = {
  Normal: 1000,
  GoingAway: 1001,
  Unsupported: 1003,
  Policy: 1008,
  TooBig: 1009,
  Internal: 1011,
} as const;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export class WebSocketPeerTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T) => void;
  readonly #ws: WebSocket;
  readonly #opts: WebSocketPeerTransportOptions;
  #malformed = 0;
  #closed = false;
  #grace: NodeJS.Timeout | undefined;
  /** Why the socket closed (code and reason), once it has. */
  closeReason: string | undefined;
  /** The protocol version initialize settled on (the SDK tells the transport). */
  protocolVersion: string | undefined;

  constructor(ws: WebSocket, opts: WebSocketPeerTransportOptions) {
    this.#ws = ws;
    this.#opts = opts;
  }

  setProtocolVersion(version: string): void {
    this.protocolVersion = version;
  }

  start(): Promise<void> {
    this.#ws.on('message', (data: RawData, isBinary: boolean) => this.#receive(data, isBinary));
    this.#ws.on('close', (code: number, reason: Buffer) => {
      this.closeReason ??= `${code}${reason.length > 0 ? ` ${reason.toString('utf8')}` : ''}`;
      this.#finish();
    });
    this.#ws.on('error', (err: Error) => this.onerror?.(err));
    return Promise.resolve();
  }

  send(message: JSONRPCMessage): Promise<void> {
    if (this.#closed || this.#ws.readyState !== this.#ws.OPEN)
      return Promise.reject(new Error('the bridge is not connected'));
    const limit = this.#opts.maxBufferedBytes ?? Math.max(1024 * 1024, 4 * this.#opts.maxMessageBytes);
    if (this.#ws.bufferedAmount > limit) {
      // What we send is bounded only if the peer reads it: one that stops reading is let go.
      this.closeWith(CloseCodes.Policy, 'not reading');
      this.#ws.terminate();
      return Promise.reject(new Error('the bridge does not read what it is sent'));
    }
    return new Promise((resolve, reject) =>
      this.#ws.send(JSON.stringify(message), (err) => (err ? reject(err) : resolve())),
    );
  }

  /** Closes the socket with a code and a reason the peer sees (and our logs say). */
  closeWith(code: number, reason: string): void {
    this.closeReason ??= `${code} ${reason}`;
    if (this.#ws.readyState === this.#ws.OPEN || this.#ws.readyState === this.#ws.CONNECTING) {
      this.#ws.close(code, reason.slice(0, 120));
      this.#grace ??= setTimeout(() => this.#ws.terminate(), this.#opts.closeGraceMs ?? 5000);
      this.#grace.unref();
    } else this.#finish();
  }

  /** The SDK's close: on the next turn, so a close with a reason given in the same turn wins. */
  close(): Promise<void> {
    setImmediate(() => this.closeWith(CloseCodes.Normal, 'closed by the server'));
    return Promise.resolve();
  }

  #finish(): void {
    if (this.#grace) clearTimeout(this.#grace);
    if (this.#closed) return;
    this.#closed = true;
    this.onclose?.();
  }

  #receive(data: RawData, isBinary: boolean): void {
    if (this.#closed) return;
    const bytes = Array.isArray(data)
      ? data.reduce((n, b) => n + b.length, 0)
      : data instanceof ArrayBuffer
        ? data.byteLength
        : data.length;
    if (bytes > this.#opts.maxMessageBytes) {
      this.closeWith(CloseCodes.TooBig, `message of ${bytes} bytes is over the limit of ${this.#opts.maxMessageBytes}`);
      return;
    }
    if (isBinary) return this.#drop('a binary frame (one JSON-RPC message per text frame expected)');
    const text = Array.isArray(data)
      ? Buffer.concat(data).toString('utf8')
      : Buffer.from(data as ArrayBuffer).toString('utf8');
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return this.#drop('not JSON');
    }
    // A result or error without an id answers nothing we asked (one bridge answers notifications so).
    if (
      isObject(parsed) &&
      parsed.id === undefined &&
      parsed.method === undefined &&
      ('result' in parsed || 'error' in parsed)
    )
      return;
    const msg = JSONRPCMessageSchema.safeParse(parsed);
    if (!msg.success) return this.#drop('not a JSON-RPC 2.0 message');
    this.onmessage?.(msg.data);
  }

  #drop(why: string): void {
    this.#opts.onDropped?.(why);
    if (++this.#malformed > (this.#opts.maxMalformed ?? 100))
      this.closeWith(CloseCodes.Policy, 'too many malformed messages');
  }
}
