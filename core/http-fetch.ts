/**
 * @module A `fetch` for the openai SDK built on node:http with keep-alive agents.
 *
 * Why: with 50 devices turning at once, the provider thread spent ~25 ms of CPU per turn, and
 * undici's fetch with its WHATWG streams was 30 % of it (profile in BENCHMARKS.md). Here a
 * response body is a plain Node stream (the SDK iterates anything async-iterable), and request
 * bodies are buffered once.
 *
 * What it covers is what the SDK sends: string, byte and FormData bodies (multipart encoded by
 * `multipart.ts`), http and https URLs. Anything else (a streamed request body, a `Request` object,
 * a data: URL) goes to the global fetch unchanged. Redirects are followed as fetch does (at most
 * 20; 303, and 301/302 after a POST, become a GET; credentials are dropped across origins).
 * Network failures reject with `TypeError('fetch failed')` and the cause, as undici does, so the
 * SDK maps them to connection errors; a connection lost mid-body fails the body with
 * `TypeError('terminated')`; an abort rejects with the signal's reason.
 */
import http from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream';
import zlib from 'node:zlib';
import { encodeMultipart } from './multipart.ts';

export type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** text()/json()/arrayBuffer() refuse bodies beyond this: they hold the whole body in memory. */
const MAX_BUFFERED_BODY = 32 * 1024 * 1024;
const MAX_REDIRECTS = 20;
/**
 * Idle keep-alive sockets close after this, before the usual 5 s of servers, to avoid reusing a
 * socket the server is closing. Node's agent applies it to free sockets only: a response that
 * pauses longer (a thinking model) is not cut (tested).
 */
const IDLE_SOCKET_MS = 4_000;
const NULL_BODY_STATUS = new Set([101, 204, 205, 304]);
const CROSS_ORIGIN_DROPPED = ['authorization', 'cookie', 'proxy-authorization'];

const agents = {
  'http:': new http.Agent({ keepAlive: true, timeout: IDLE_SOCKET_MS, scheduling: 'lifo' }),
  'https:': new https.Agent({ keepAlive: true, timeout: IDLE_SOCKET_MS, scheduling: 'lifo' }),
};

interface PreparedBody {
  bytes: Buffer | undefined;
  contentType?: string;
}

/** Buffers a body of a kind we send ourselves; undefined for kinds left to the global fetch. */
async function prepareBody(body: RequestInit['body']): Promise<PreparedBody | undefined> {
  if (body === undefined || body === null) return { bytes: undefined };
  if (typeof body === 'string') return { bytes: Buffer.from(body), contentType: 'text/plain;charset=UTF-8' };
  if (body instanceof ArrayBuffer) return { bytes: Buffer.from(body) };
  if (ArrayBuffer.isView(body)) return { bytes: Buffer.from(body.buffer, body.byteOffset, body.byteLength) };
  if (body instanceof URLSearchParams) return { bytes: Buffer.from(body.toString()), contentType: 'application/x-www-form-urlencoded;charset=UTF-8' };
  if (body instanceof FormData) {
    const form = await encodeMultipart(body);
    return { bytes: form.body, contentType: form.contentType };
  }
  if (body instanceof Blob) return { bytes: Buffer.from(await body.arrayBuffer()), ...(body.type ? { contentType: body.type } : {}) };
  return undefined;
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

/**
 * The body as the caller iterates it. A connection lost mid-body fails the iteration with
 * `TypeError('terminated')` and the cause, as undici's fetch does (Node's own error says
 * "aborted", which reads like a cancellation); an abort keeps the signal's reason.
 */
async function* bodyChunks(stream: Readable, signal: AbortSignal | undefined): AsyncGenerator<Buffer> {
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) yield chunk;
  } catch (err) {
    if (signal?.aborted) throw err;
    throw new TypeError('terminated', { cause: err });
  }
}

/**
 * The body as an async iterable whose `return()` closes the connection even before the first
 * read: that is how the SDK cancels a body it will not read (`CancelReadableStream`), and a fresh
 * generator's `return()` would never reach the stream.
 */
function cancellableBody(stream: Readable, signal: AbortSignal | undefined): AsyncIterable<Buffer> {
  let chunks: AsyncGenerator<Buffer> | undefined;
  return {
    [Symbol.asyncIterator]: () => {
      chunks ??= bodyChunks(stream, signal);
      const it = chunks;
      return {
        next: () => it.next(),
        return: (value?: unknown) => {
          stream.destroy();
          return it.return(value as undefined);
        },
      };
    },
  };
}

/** A Response as far as the SDK and our callers use one; the body is an async iterable of bytes. */
class NodeResponse {
  readonly ok: boolean;
  readonly redirected: boolean;
  readonly type = 'basic';
  readonly body: AsyncIterable<Buffer> | null;
  readonly #stream: Readable | null;
  #used = false;

  readonly status: number;
  readonly statusText: string;
  readonly headers: Headers;
  readonly url: string;

  constructor(status: number, statusText: string, headers: Headers, url: string, stream: Readable | null, signal: AbortSignal | undefined, redirects: number) {
    this.status = status;
    this.statusText = statusText;
    this.headers = headers;
    this.url = url;
    this.ok = status >= 200 && status < 300;
    this.redirected = redirects > 0;
    this.#stream = stream;
    this.body = stream ? cancellableBody(stream, signal) : null;
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
    for await (const chunk of this.body) {
      size += chunk.length;
      if (size > MAX_BUFFERED_BODY) {
        this.#stream?.destroy();
        throw new TypeError(`response body over ${MAX_BUFFERED_BODY} bytes`);
      }
      chunks.push(chunk);
    }
    return Buffer.concat(chunks, size);
  }
}

function responseHeaders(raw: string[]): Headers {
  const headers = new Headers();
  for (let i = 0; i + 1 < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!);
  return headers;
}

/** Undoes a content coding the server applied although we asked for none. */
function decodedBody(res: http.IncomingMessage): Readable {
  const coding = (res.headers['content-encoding'] ?? '').trim().toLowerCase();
  const decoder =
    coding === 'gzip' || coding === 'x-gzip' ? zlib.createGunzip({ flush: zlib.constants.Z_SYNC_FLUSH })
    : coding === 'deflate' ? zlib.createInflate({ flush: zlib.constants.Z_SYNC_FLUSH })
    : coding === 'br' ? zlib.createBrotliDecompress()
    : undefined;
  if (!decoder) return res;
  pipeline(res, decoder, () => {});
  return decoder;
}

interface Attempt {
  url: URL;
  method: string;
  headers: Record<string, string>;
  body: Buffer | undefined;
}

function send(attempt: Attempt, signal: AbortSignal | undefined): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const protocol = attempt.url.protocol as 'http:' | 'https:';
    const request = (protocol === 'https:' ? https : http).request(attempt.url, {
      method: attempt.method,
      headers: attempt.headers,
      agent: agents[protocol],
    });
    const onAbort = (): void => {
      request.destroy();
      reject(abortReason(signal!));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    request.once('response', (res) => {
      signal?.removeEventListener('abort', onAbort);
      resolve(res);
    });
    // `on`, not `once`: a socket error after the response still reaches the request.
    request.on('error', (err) => {
      signal?.removeEventListener('abort', onAbort);
      reject(new TypeError('fetch failed', { cause: err }));
    });
    request.end(attempt.body);
  });
}

async function nodeFetch(input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
  const url = typeof input === 'string' ? new URL(input) : input instanceof URL ? new URL(input.href) : undefined;
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) return globalThis.fetch(input, init);
  const prepared = await prepareBody(init.body);
  if (!prepared) return globalThis.fetch(input, init);
  const signal = init.signal ?? undefined;
  if (signal?.aborted) throw abortReason(signal);

  const headers: Record<string, string> = {};
  new Headers(init.headers).forEach((value, name) => {
    headers[name] = value;
  });
  if (prepared.contentType && !headers['content-type']) headers['content-type'] = prepared.contentType;
  headers['accept-encoding'] ??= 'identity';
  const attempt: Attempt = { url, method: (init.method ?? 'GET').toUpperCase(), headers, body: prepared.bytes };

  for (let redirects = 0; ; redirects++) {
    if (attempt.body) attempt.headers['content-length'] = String(attempt.body.length);
    else if (attempt.method === 'GET' || attempt.method === 'HEAD') delete attempt.headers['content-length'];
    else attempt.headers['content-length'] = '0';
    const res = await send(attempt, signal);
    if (signal?.aborted) {
      res.destroy();
      throw abortReason(signal);
    }
    const status = res.statusCode ?? 0;
    const location = res.headers.location;
    if ([301, 302, 303, 307, 308].includes(status) && location && init.redirect !== 'manual') {
      res.resume();
      if (init.redirect === 'error' || redirects >= MAX_REDIRECTS) throw new TypeError('fetch failed', { cause: new Error(`redirect refused or too many redirects (${status} to ${location})`) });
      const next = new URL(location, attempt.url);
      if (next.protocol !== 'http:' && next.protocol !== 'https:') throw new TypeError('fetch failed', { cause: new Error(`redirect to ${next.protocol} refused`) });
      if (status === 303 ? attempt.method !== 'HEAD' : (status === 301 || status === 302) && attempt.method === 'POST') {
        attempt.method = 'GET';
        attempt.body = undefined;
        delete attempt.headers['content-type'];
      }
      if (next.origin !== attempt.url.origin) for (const name of CROSS_ORIGIN_DROPPED) delete attempt.headers[name];
      attempt.url = next;
      continue;
    }

    let body: Readable | null = null;
    if (NULL_BODY_STATUS.has(status) || attempt.method === 'HEAD') res.resume();
    else body = decodedBody(res);
    if (signal && body) {
      // An abort after the headers ends the body with the abort's reason, as fetch does.
      const stream = body;
      const onAbort = (): void => {
        stream.destroy(abortReason(signal) as Error);
        res.destroy();
      };
      signal.addEventListener('abort', onAbort, { once: true });
      stream.once('close', () => signal.removeEventListener('abort', onAbort));
    }
    const response = new NodeResponse(status, res.statusMessage ?? '', responseHeaders(res.rawHeaders), attempt.url.href, body, signal, redirects);
    return response as unknown as Response;
  }
}

/**
 * The fetch to hand to the openai SDK. `Response` is attached because the SDK looks for it to decide
 * whether a custom fetch can send FormData (it can).
 */
export const httpFetch: Fetch & { Response: typeof Response } = Object.assign(nodeFetch, { Response });
