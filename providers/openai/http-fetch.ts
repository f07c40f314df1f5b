/**
 * @module The `fetch` the openai SDK is given: node:http on keep-alive agents instead of undici.
 *
 * Why: every turn's ASR upload and chat stream passes through the one provider thread, and with
 * undici's fetch and its WHATWG streams the SDK cost that thread ~25 ms of CPU per turn against
 * ~13 ms here (BENCHMARKS.md). A response body is a plain Node stream offered as an async
 * iterable (the SDK iterates anything async-iterable), and a request body is buffered once.
 *
 * What it covers is what the SDK sends: string, byte and FormData bodies (multipart encoded by
 * `multipart.ts`) to http and https URLs; anything else is refused with a TypeError. On purpose:
 * no redirects (an OpenAI-compatible endpoint does not move; a 3xx reaches the SDK as an error
 * status), no compressed answers (it asks for `identity`), no timeouts or retries (the clients
 * own them). Network failures reject with `TypeError('fetch failed')` and the cause, as undici's
 * do, so the SDK reports a connection error; an abort rejects with the signal's reason.
 */
import http from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';
import { awaitEndAfterDone, EventStreamEnd } from './event-stream-end.ts';
import { encodeMultipart } from './multipart.ts';

export type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/**
 * Idle keep-alive sockets are kept this long, so a burst of turns after a quiet spell does not
 * open a connection (a TLS handshake with a remote provider) per request. A server that announces
 * a shorter `Keep-Alive: timeout=N` (Node's own: 5 s) is obeyed, one second early, by Node's agent;
 * one that closes a socket without announcing it costs one resend (`isStaleSocketError`). Node
 * applies this to free sockets only: an answer that pauses longer (a thinking model) is not cut.
 */
const IDLE_SOCKET_MS = 30_000;
/** text()/json()/arrayBuffer() refuse answers beyond this (error answers, transcripts). */
const MAX_BUFFERED_BODY = 1024 * 1024;
/** One line of an event stream may not exceed this: a stream without line breaks would grow the SDK's buffer forever. */
const MAX_EVENT_LINE = 1024 * 1024;
const NULL_BODY_STATUS = new Set([101, 204, 205, 304]);

const agents = {
  'http:': new http.Agent({ keepAlive: true, timeout: IDLE_SOCKET_MS, scheduling: 'lifo' }),
  'https:': new https.Agent({ keepAlive: true, timeout: IDLE_SOCKET_MS, scheduling: 'lifo' }),
};

/** The connection was lost in the middle of an answer's body (the provider failed; before the headers it is a `fetch failed`). */
export class AnswerCutError extends TypeError {
  constructor(cause: unknown) {
    super('connection lost in the middle of the answer', { cause });
    this.name = 'AnswerCutError';
  }
}

/** An answer we refuse to hold: a buffered body or an event-stream line over its limit (a retry would only repeat it). */
export class AnswerTooLargeError extends TypeError {
  constructor(what: string, limit: number) {
    super(`${what} exceeded ${limit} bytes`);
    this.name = 'AnswerTooLargeError';
  }
}

interface PreparedBody {
  bytes: Buffer | undefined;
  contentType?: string;
}

async function prepareBody(body: RequestInit['body']): Promise<PreparedBody> {
  if (body === undefined || body === null) return { bytes: undefined };
  if (typeof body === 'string') return { bytes: Buffer.from(body), contentType: 'text/plain;charset=UTF-8' };
  if (body instanceof ArrayBuffer) return { bytes: Buffer.from(body) };
  if (ArrayBuffer.isView(body)) return { bytes: Buffer.from(body.buffer, body.byteOffset, body.byteLength) };
  if (body instanceof URLSearchParams)
    return { bytes: Buffer.from(body.toString()), contentType: 'application/x-www-form-urlencoded;charset=UTF-8' };
  if (body instanceof FormData) {
    const form = await encodeMultipart(body);
    return { bytes: form.body, contentType: form.contentType };
  }
  if (body instanceof Blob)
    return { bytes: Buffer.from(await body.arrayBuffer()), ...(body.type ? { contentType: body.type } : {}) };
  throw new TypeError('http-fetch sends string, byte, Blob and FormData bodies only');
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

/** Bytes since the last line break after `chunk`, given the count before it. */
function openLineBytes(chunk: Buffer, before: number): number {
  const lf = chunk.lastIndexOf(10);
  const cr = chunk.lastIndexOf(13);
  const last = Math.max(lf, cr);
  return last < 0 ? before + chunk.length : chunk.length - last - 1;
}

/**
 * The body as the caller iterates it. A connection lost mid-body fails the iteration with
 * `AnswerCutError` (Node's own error says "aborted", which reads like a cancellation); an abort
 * keeps the signal's reason. An event stream (`end` watches it) ends at a line over `MAX_EVENT_LINE`.
 */
async function* bodyChunks(
  stream: Readable,
  signal: AbortSignal | undefined,
  end: EventStreamEnd | undefined,
): AsyncGenerator<Buffer> {
  let open = 0;
  try {
    // A reader that stops early does not destroy the stream here: `release` decides.
    for await (const chunk of stream.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
      if (end) {
        open = openLineBytes(chunk, open);
        if (open > MAX_EVENT_LINE) throw new AnswerTooLargeError('an event-stream line', MAX_EVENT_LINE);
        end.push(chunk);
      }
      yield chunk;
    }
  } catch (err) {
    if (signal?.aborted || err instanceof AnswerTooLargeError) throw err;
    throw new AnswerCutError(err);
  } finally {
    await release(stream, end);
  }
}

/**
 * The connection once the reader is done with the body: read to its end, Node's agent keeps it;
 * stopped after an event stream's end line, it is kept once the body's end has come (waited for
 * here, bounded); otherwise it is not reusable and closes.
 */
async function release(stream: Readable, end: EventStreamEnd | undefined): Promise<void> {
  if (stream.readableEnded) return;
  if (end?.seen) return awaitEndAfterDone(stream);
  stream.destroy();
}

/**
 * The body as an async iterable whose `return()` closes the connection even before the first
 * read: that is how the SDK cancels a body it will not read (`CancelReadableStream`), and a fresh
 * generator's `return()` would never reach the stream.
 */
function cancellableBody(
  stream: Readable,
  signal: AbortSignal | undefined,
  eventStream: boolean,
): AsyncIterable<Buffer> {
  let chunks: AsyncGenerator<Buffer> | undefined;
  const end = eventStream ? new EventStreamEnd() : undefined;
  return {
    [Symbol.asyncIterator]: () => {
      chunks ??= bodyChunks(stream, signal, end);
      const it = chunks;
      return {
        next: () => it.next(),
        return: (value?: unknown) => {
          // At once, which also ends a read in progress; after the end line the generator's own
          // clean-up (`release`) keeps the connection instead.
          if (!end?.seen) stream.destroy();
          return it.return(value as undefined);
        },
      };
    },
  };
}

/** A Response as far as the SDK uses one; the body is an async iterable of bytes. */
class NodeResponse {
  readonly ok: boolean;
  readonly redirected = false;
  readonly type = 'basic';
  readonly body: AsyncIterable<Buffer> | null;
  readonly status: number;
  readonly statusText: string;
  readonly headers: Headers;
  readonly url: string;
  #used = false;

  constructor(res: http.IncomingMessage, url: string, body: Readable | null, signal: AbortSignal | undefined) {
    this.status = res.statusCode ?? 0;
    this.statusText = res.statusMessage ?? '';
    this.headers = new Headers();
    for (let i = 0; i + 1 < res.rawHeaders.length; i += 2)
      this.headers.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
    this.url = url;
    this.ok = this.status >= 200 && this.status < 300;
    const eventStream = (res.headers['content-type'] ?? '').includes('text/event-stream');
    this.body = body ? cancellableBody(body, signal, eventStream) : null;
  }

  get bodyUsed(): boolean {
    return this.#used;
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    const bytes = await this.#readAll();
    return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  }

  async text(): Promise<string> {
    return (await this.#readAll()).toString('utf8');
  }

  async json(): Promise<unknown> {
    return JSON.parse(await this.text());
  }

  async #readAll(): Promise<Buffer> {
    if (this.#used) throw new TypeError('Body is unusable: Body has already been read');
    this.#used = true;
    if (!this.body) return Buffer.alloc(0);
    const chunks: Buffer[] = [];
    let size = 0;
    const it = this.body[Symbol.asyncIterator]();
    for (let r = await it.next(); !r.done; r = await it.next()) {
      size += r.value.length;
      if (size > MAX_BUFFERED_BODY) {
        await it.return?.();
        throw new AnswerTooLargeError('an answer', MAX_BUFFERED_BODY);
      }
      chunks.push(r.value);
    }
    return Buffer.concat(chunks, size);
  }
}

/** How a reused keep-alive socket fails when the server had closed it: reset, or the write hit a closed pipe. */
function isStaleSocketError(err: Error): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ECONNRESET' || code === 'EPIPE';
}

interface Attempt {
  url: URL;
  method: string;
  headers: Record<string, string>;
  body: Buffer | undefined;
}

/**
 * Sends the request and resolves with the answer's head. An idle kept-alive connection that the
 * server closed as this request went out did not take the request, so it is sent once more on a
 * new one (Node's advice for `reusedSocket`); only once: a second failure is the server's answer.
 */
function send(attempt: Attempt, signal: AbortSignal | undefined, resent = false): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const protocol = attempt.url.protocol as 'http:' | 'https:';
    const request = (protocol === 'https:' ? https : http).request(attempt.url, {
      method: attempt.method,
      headers: attempt.headers,
      agent: agents[protocol],
    });
    let answered = false;
    const onAbort = (): void => {
      request.destroy();
      reject(abortReason(signal!));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    request.once('response', (res) => {
      answered = true;
      signal?.removeEventListener('abort', onAbort);
      resolve(res);
    });
    // `on`, not `once`: a socket error after the response still reaches the request.
    request.on('error', (err) => {
      if (answered) return;
      signal?.removeEventListener('abort', onAbort);
      if (signal?.aborted) return reject(abortReason(signal));
      if (request.reusedSocket && !resent && isStaleSocketError(err)) return resolve(send(attempt, signal, true));
      reject(new TypeError('fetch failed', { cause: err }));
    });
    request.end(attempt.body);
  });
}

async function nodeFetch(input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
  if (typeof input !== 'string' && !(input instanceof URL))
    throw new TypeError('http-fetch takes a URL, not a Request');
  const url = new URL(input);
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new TypeError(`http-fetch cannot fetch ${url.protocol} URLs`);
  const signal = init.signal ?? undefined;
  if (signal?.aborted) throw abortReason(signal);
  const prepared = await prepareBody(init.body);

  const headers: Record<string, string> = {};
  new Headers(init.headers).forEach((value, name) => {
    headers[name] = value;
  });
  if (prepared.contentType && !headers['content-type']) headers['content-type'] = prepared.contentType;
  headers['accept-encoding'] = 'identity';
  const method = (init.method ?? 'GET').toUpperCase();
  if (prepared.bytes) headers['content-length'] = String(prepared.bytes.length);
  else if (method !== 'GET' && method !== 'HEAD') headers['content-length'] = '0';

  const res = await send({ url, method, headers, body: prepared.bytes }, signal);
  if (signal?.aborted) {
    res.destroy();
    throw abortReason(signal);
  }
  let body: Readable | null = null;
  if (NULL_BODY_STATUS.has(res.statusCode ?? 0) || method === 'HEAD') res.resume();
  else body = res;
  if (signal && body) {
    // An abort after the headers ends the body with the abort's reason, as fetch does.
    const stream = body;
    const onAbort = (): void => {
      stream.destroy(abortReason(signal) as Error);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    stream.once('close', () => signal.removeEventListener('abort', onAbort));
  }
  return new NodeResponse(res, url.href, body, signal) as unknown as Response;
}

/**
 * The fetch to hand to the openai SDK. `Response` is attached because the SDK looks for it to
 * decide whether a custom fetch can send FormData (it can).
 */
export const httpFetch: Fetch & { Response: typeof Response } = Object.assign(nodeFetch, { Response });
