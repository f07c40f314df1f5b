/**
 * @module The OpenAI-compatible HTTP wire on node:http keep-alive agents: JSON and multipart
 * POSTs, a provider's error answer turned into `WireStatusError`, and server-sent events read as
 * JSON objects. The LLM client and the OpenAI-compatible ASR and TTS speak through it.
 *
 * Why not the openai SDK: with fifty turns starting at once, the provider thread's per-request
 * work (the SDK's request building, fetch and web streams, its SSE decoder, FormData and File
 * objects for an upload) queued every turn's ASR and first token behind the others. The same
 * calls on this module took ASR p50 at 50 devices from 127–236 ms to 48–122 ms (BENCHMARKS.md).
 *
 * What it does not do, on purpose: retries and timeouts (the callers own them: a retry after
 * spoken text would repeat it), redirects (an OpenAI-compatible POST endpoint does not move; a
 * 3xx is an error), compressed answers (it asks for `identity`).
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { ErrorCode, VoiceError } from './errors.ts';

/**
 * Idle keep-alive sockets are kept this long, so a burst of turns after a quiet spell does not
 * open a connection (a TLS handshake with a remote provider) per request. A server that announces
 * a shorter `Keep-Alive: timeout=N` (Node's own: 5 s) is obeyed, one second early, by Node's agent;
 * one that closes a socket without announcing it costs one resend (`isStaleSocketError`). Node
 * applies this to free sockets only: an answer that pauses longer (a thinking model) is not cut
 * (tested).
 */
const IDLE_SOCKET_MS = 30_000;
/** How much of an error answer is read for its message. */
const MAX_ERROR_BODY = 64 * 1024;
/** One server-sent event may not exceed this (a stream without line breaks would grow forever). */
const MAX_EVENT_CHARS = 1024 * 1024;

const agents = {
  'http:': new http.Agent({ keepAlive: true, timeout: IDLE_SOCKET_MS, scheduling: 'lifo' }),
  'https:': new https.Agent({ keepAlive: true, timeout: IDLE_SOCKET_MS, scheduling: 'lifo' }),
};

/** A non-2xx answer. `providerMessage` is the provider's own text (its JSON `error.message` when it sent one). */
export class WireStatusError extends Error {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly providerMessage: string;
  constructor(status: number, headers: http.IncomingHttpHeaders, providerMessage: string) {
    super(`${status} ${providerMessage}`);
    this.name = 'WireStatusError';
    this.status = status;
    this.headers = headers;
    this.providerMessage = providerMessage;
  }

  /** The wait the server asked for before a retry (`retry-after-ms`, or `retry-after` in seconds), in ms. */
  retryAfterMs(): number | undefined {
    const ms = Number(this.headers['retry-after-ms']);
    if (Number.isFinite(ms) && ms > 0) return ms;
    const s = Number(this.headers['retry-after']);
    if (Number.isFinite(s) && s > 0) return s * 1000;
    return undefined;
  }
}

/**
 * The connection failed: refused, reset or lost before the answer's headers (`midAnswer` false:
 * the provider is unreachable), or lost in the middle of its body (`midAnswer` true: it failed).
 */
export class WireConnectionError extends Error {
  readonly midAnswer: boolean;
  constructor(message: string, cause: unknown, midAnswer = false) {
    super(message, { cause });
    this.name = 'WireConnectionError';
    this.midAnswer = midAnswer;
  }
}

/**
 * An `error` sent inside a 200 event stream (`malformed` false: the provider failed, a retry may
 * help), or a stream we cannot read (`malformed` true: not JSON, an endless event; a retry would
 * only repeat it).
 */
export class WireStreamError extends Error {
  readonly providerMessage: string;
  readonly malformed: boolean;
  constructor(providerMessage: string, malformed = false) {
    super(`stream error: ${providerMessage}`);
    this.name = 'WireStreamError';
    this.providerMessage = providerMessage;
    this.malformed = malformed;
  }
}

export type FormField = { name: string; value: string } | { name: string; filename: string; contentType: string; data: Uint8Array };
export type WireBody = { json: unknown } | { form: readonly FormField[] };

export interface WireResponse {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  /** The body as it arrives. A connection lost mid-body throws `WireConnectionError`; an abort, an Aborted `VoiceError`. */
  chunks(): AsyncGenerator<Buffer>;
  /** The whole body as text; throws when it exceeds `maxBytes`. */
  text(maxBytes: number): Promise<string>;
}

export interface WireClient {
  /**
   * POSTs `body` to `path` under the base URL and resolves once a 2xx answer's headers arrive.
   * Rejects with `WireStatusError`, `WireConnectionError`, or (on abort) an Aborted `VoiceError`.
   * Aborting `signal` later also ends the body.
   */
  post(path: string, body: WireBody, opts: { signal: AbortSignal; accept?: string }): Promise<WireResponse>;
}

export interface WireClientOptions {
  baseURL: string;
  /** Sent as a Bearer token; empty sends no Authorization header (local servers need none). */
  apiKey: string;
  /** Extra headers, sent as given (they may override the defaults). */
  headers?: Readonly<Record<string, string>>;
}

/** Quotes a multipart field or file name as browsers do: `"`, CR and LF percent-encoded, so it cannot leave its header. */
function quoted(name: string): string {
  return `"${name.replace(/"/g, '%22').replace(/\r/g, '%0D').replace(/\n/g, '%0A')}"`;
}

function encodeForm(fields: readonly FormField[]): { bytes: Buffer; contentType: string } {
  const boundary = `----xiaozhi${randomBytes(12).toString('hex')}`;
  const parts: Buffer[] = [];
  for (const f of fields) {
    if ('value' in f) {
      parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name=${quoted(f.name)}\r\n\r\n${f.value}\r\n`));
    } else {
      const type = f.contentType.replace(/[\r\n]/g, '');
      parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name=${quoted(f.name)}; filename=${quoted(f.filename)}\r\nContent-Type: ${type}\r\n\r\n`));
      parts.push(Buffer.from(f.data.buffer, f.data.byteOffset, f.data.byteLength), Buffer.from('\r\n'));
    }
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { bytes: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}

/** What an aborted request rejects with: the project's Aborted error, as `throwIfAborted` throws it. */
function abortError(signal: AbortSignal): VoiceError {
  return new VoiceError(ErrorCode.Aborted, 'aborted', { cause: signal.reason });
}

/** The provider's message from an error body: OpenAI's `{error: {message}}`, a bare `message`/`error`, or the text. */
function messageOf(text: string, status: number, statusText: string | undefined): string {
  try {
    const body = JSON.parse(text) as { error?: unknown; message?: unknown; detail?: unknown };
    const e = body.error;
    if (e && typeof e === 'object' && typeof (e as { message?: unknown }).message === 'string') return (e as { message: string }).message;
    if (typeof e === 'string') return e;
    if (typeof body.message === 'string') return body.message;
    if (typeof body.detail === 'string') return body.detail;
  } catch {
    // not JSON: the text itself
  }
  const t = text.trim().slice(0, 300);
  return t || statusText || `status ${status}`;
}

async function readText(res: http.IncomingMessage, maxBytes: number, signal: AbortSignal): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of bodyChunks(res, signal)) {
    size += chunk.length;
    if (size > maxBytes) {
      res.destroy();
      throw new WireConnectionError(`answer larger than ${maxBytes} bytes`, undefined, true);
    }
    parts.push(chunk);
  }
  return Buffer.concat(parts).toString('utf8');
}

async function* bodyChunks(res: http.IncomingMessage, signal: AbortSignal): AsyncGenerator<Buffer> {
  try {
    for await (const chunk of res as AsyncIterable<Buffer>) yield chunk;
  } catch (err) {
    if (signal.aborted) throw abortError(signal);
    throw new WireConnectionError('connection lost in the middle of the answer', err, true);
  } finally {
    // Also reached when the consumer stops early: the socket is not reusable then.
    if (!res.complete) res.destroy();
  }
}

/** How a reused keep-alive socket fails when the server had closed it: reset, or the write hit a closed pipe. */
function isStaleSocketError(err: Error): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ECONNRESET' || code === 'EPIPE';
}

export function createWireClient(opts: WireClientOptions): WireClient {
  const base = opts.baseURL.endsWith('/') ? opts.baseURL.slice(0, -1) : opts.baseURL;
  const fixed: Record<string, string> = { 'accept-encoding': 'identity', 'user-agent': 'xiaozhi-ts-server' };
  if (opts.apiKey) fixed.authorization = `Bearer ${opts.apiKey}`;

  function post(path: string, body: WireBody, o: { signal: AbortSignal; accept?: string }): Promise<WireResponse> {
    const { signal } = o;
    if (signal.aborted) return Promise.reject(abortError(signal));
    const url = new URL(base + path);
    const encoded = 'json' in body ? { bytes: Buffer.from(JSON.stringify(body.json)), contentType: 'application/json' } : encodeForm(body.form);
    const headers = {
      ...fixed,
      accept: o.accept ?? 'application/json',
      'content-type': encoded.contentType,
      'content-length': String(encoded.bytes.length),
      ...opts.headers,
    };
    const agent = url.protocol === 'https:' ? agents['https:'] : agents['http:'];
    const mod = url.protocol === 'https:' ? https : http;
    return new Promise<WireResponse>((resolve, reject) => {
      const send = (resent: boolean): void => {
        let res: http.IncomingMessage | undefined;
        const onAbort = (): void => {
          const err = abortError(signal);
          req.destroy(err);
          res?.destroy(err);
        };
        const req = mod.request(url, { method: 'POST', agent, headers }, (r) => {
          res = r;
          const status = r.statusCode ?? 0;
          // Once the answer is over, a later abort (callers abort their scope when done) has nothing to end.
          const unhook = (): void => signal.removeEventListener('abort', onAbort);
          r.once('end', unhook);
          r.once('close', unhook);
          if (status < 200 || status > 299) {
            readText(r, MAX_ERROR_BODY, signal).then(
              (text) => reject(new WireStatusError(status, r.headers, messageOf(text, status, r.statusMessage))),
              () => reject(new WireStatusError(status, r.headers, r.statusMessage || `status ${status}`)),
            );
            return;
          }
          resolve({
            status,
            headers: r.headers,
            chunks: () => bodyChunks(r, signal),
            text: (maxBytes) => readText(r, maxBytes, signal),
          });
        });
        // A socket error after the answer arrived reaches the response; this keeps the request's quiet.
        req.on('error', (err) => {
          signal.removeEventListener('abort', onAbort);
          if (signal.aborted) return reject(abortError(signal));
          // An idle keep-alive connection that the server closed as this request went out: the
          // server did not take the request, so it is sent once more (Node's own advice for
          // `reusedSocket`). Only once: a second failure is the server's answer.
          if (!res && req.reusedSocket && !resent && isStaleSocketError(err)) return send(true);
          reject(new WireConnectionError(`cannot reach ${url.host}: ${err.message}`, err));
        });
        signal.addEventListener('abort', onAbort, { once: true });
        req.end(encoded.bytes);
      };
      send(false);
    });
  }

  return { post };
}

/**
 * The JSON objects of a server-sent event stream, in order, until `[DONE]` or the end. After
 * `[DONE]` the rest of the body is read and ignored: stopping there would leave the answer's last
 * bytes unread and cost the keep-alive connection (measured: a new connection per request). An `error`
 * event, or an object carrying `error`, throws `WireStreamError` (OpenAI reports failures that
 * happen after the headers that way). Lines may end in LF, CRLF or CR; comments are skipped.
 */
export async function* sseJson(res: WireResponse): AsyncGenerator<unknown> {
  const decoder = new TextDecoder();
  let buf = '';
  let data: string[] = [];
  let event = '';
  const dispatch = (): unknown => {
    const payload = data.join('\n');
    const type = event;
    data = [];
    event = '';
    if (payload === '') return undefined;
    if (payload === '[DONE]') return DONE;
    let obj: unknown;
    try {
      obj = JSON.parse(payload);
    } catch {
      throw new WireStreamError(`not JSON: ${payload.slice(0, 120)}`, true);
    }
    const err = obj && typeof obj === 'object' ? (obj as { error?: unknown }).error : undefined;
    if (type === 'error' || (err !== undefined && err !== null)) {
      const m = err && typeof err === 'object' ? (err as { message?: unknown }).message : (err ?? (obj as { message?: unknown }).message);
      throw new WireStreamError(typeof m === 'string' ? m : payload.slice(0, 300));
    }
    return obj;
  };
  let done = false;
  for await (const chunk of res.chunks()) {
    if (done) continue;
    buf += decoder.decode(chunk, { stream: true });
    let start = 0;
    for (;;) {
      let end = start;
      while (end < buf.length && buf.charCodeAt(end) !== 10 && buf.charCodeAt(end) !== 13) end++;
      if (end >= buf.length) break;
      // A CR at the very end may be the first half of a CRLF: wait for the next chunk.
      if (buf.charCodeAt(end) === 13 && end + 1 >= buf.length) break;
      const line = buf.slice(start, end);
      start = end + (buf.charCodeAt(end) === 13 && buf.charCodeAt(end + 1) === 10 ? 2 : 1);
      if (line === '') {
        const obj = dispatch();
        if (obj === DONE) {
          done = true;
          break;
        }
        if (obj !== undefined) yield obj;
        continue;
      }
      if (line.charCodeAt(0) === 58) continue; // ':' comment
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.charCodeAt(0) === 32) value = value.slice(1);
      if (field === 'data') data.push(value);
      else if (field === 'event') event = value;
    }
    buf = done ? '' : buf.slice(start);
    if (buf.length + data.reduce((n, d) => n + d.length, 0) > MAX_EVENT_CHARS) {
      throw new WireStreamError(`an event exceeded ${MAX_EVENT_CHARS} characters`, true);
    }
  }
}

const DONE = Symbol('done');
