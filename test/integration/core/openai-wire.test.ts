/** The OpenAI-compatible wire (core/openai-wire.ts) against real loopback HTTP servers. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { isAbortError } from '../../../core/errors.ts';
import {
  WireConnectionError,
  WireStatusError,
  WireStreamError,
  createWireClient,
  sseJson,
  type WireResponse,
} from '../../../core/openai-wire.ts';

interface Seen {
  url: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  socketPort: number;
}

let url = '';
let server: http.Server;
const seen: Seen[] = [];
let closedResponses = 0;
/** Raw SSE bytes per test, written in the pieces given, 5 ms apart. */
let ssePieces: string[] = [];

before(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    res.on('close', () => closedResponses++);
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      seen.push({ url: req.url ?? '', headers: req.headers, body, socketPort: req.socket.remotePort ?? 0 });
      const path = (req.url ?? '').replace(/^\/v1/, '');
      switch (path) {
        case '/echo':
          res.setHeader('content-type', 'application/json');
          res.end(JSON.stringify({ ok: true, bytes: body.length }));
          return;
        case '/form': {
          // The platform's own multipart parser reads the body back.
          const request = new Request('http://x/', { method: 'POST', body, headers: { 'content-type': req.headers['content-type'] ?? '' } });
          void request.formData().then(async (form) => {
            const out: Record<string, unknown> = {};
            const entries: Array<[string, FormDataEntryValue]> = [];
            form.forEach((v, k) => entries.push([k, v]));
            for (const [k, v] of entries) out[k] = typeof v === 'string' ? v : { name: v.name, type: v.type, bytes: [...new Uint8Array(await v.arrayBuffer())] };
            res.end(JSON.stringify(out));
          }, (err: Error) => res.writeHead(400).end(err.message));
          return;
        }
        case '/429':
          res.writeHead(429, { 'retry-after': '2', 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: { message: 'slow down', type: 'rate_limit' } }));
          return;
        case '/500-text':
          res.writeHead(500).end('upstream exploded');
          return;
        case '/huge-error':
          res.writeHead(400, 'Bad Thing');
          res.end(Buffer.alloc(200 * 1024, 97));
          return;
        case '/sse': {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          const pieces = [...ssePieces];
          const next = (): void => {
            const p = pieces.shift();
            if (p === undefined) return void res.end();
            res.write(p);
            setTimeout(next, 5);
          };
          next();
          return;
        }
        case '/hang':
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write('data: {"n":1}\n\n');
          return;
        case '/pause':
          // Longer than a free socket's timeout here (4 s: this server's 5 s keep-alive hint, less
          // the second Node's agent keeps in hand), which must not close a socket in use.
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write('data: {"n":1}\n\n');
          setTimeout(() => res.end('data: {"n":2}\n\n'), 4_500);
          return;
        case '/cut':
          res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': '1000' });
          res.write(Buffer.alloc(100));
          setTimeout(() => res.socket?.destroy(), 20);
          return;
        case '/no-headers':
          return; // never answers
        default:
          res.writeHead(404).end();
      }
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
after(() => {
  server.closeAllConnections();
  server.close();
});

const signal = (): AbortSignal => new AbortController().signal;

async function collect(res: WireResponse): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const o of sseJson(res)) out.push(o);
  return out;
}

async function untilClosed(count: number): Promise<void> {
  for (let i = 0; i < 200 && closedResponses < count; i++) await new Promise((r) => setTimeout(r, 10));
}

test('a JSON POST joins the path to the base URL and sends the key, custom headers and body', async () => {
  const wire = createWireClient({ baseURL: `${url}/`, apiKey: 'sk-1', headers: { 'x-extra': 'yes', 'user-agent': 'mine' } });
  const res = await wire.post('/echo', { json: { a: 1 } }, { signal: signal() });
  assert.deepEqual(JSON.parse(await res.text(1000)), { ok: true, bytes: 7 });
  const s = seen.at(-1) as Seen;
  assert.equal(s.url, '/v1/echo');
  assert.equal(s.headers.authorization, 'Bearer sk-1');
  assert.equal(s.headers['x-extra'], 'yes');
  assert.equal(s.headers['user-agent'], 'mine');
  assert.equal(s.headers['content-type'], 'application/json');
  assert.equal(s.headers['accept-encoding'], 'identity');
  assert.equal(s.body.toString(), '{"a":1}');

  const open = createWireClient({ baseURL: url, apiKey: '' });
  await (await open.post('/echo', { json: {} }, { signal: signal() })).text(1000);
  assert.equal((seen.at(-1) as Seen).headers.authorization, undefined, 'no key, no Authorization header');
});

test('sequential requests reuse one keep-alive connection', async () => {
  const wire = createWireClient({ baseURL: url, apiKey: '' });
  await (await wire.post('/echo', { json: 1 }, { signal: signal() })).text(100);
  await (await wire.post('/echo', { json: 2 }, { signal: signal() })).text(100);
  const [a, b] = seen.slice(-2) as [Seen, Seen];
  assert.equal(a.socketPort, b.socketPort);
});

test('a form goes out as multipart the platform parser reads back; a hostile name stays in its part', async () => {
  const wire = createWireClient({ baseURL: url, apiKey: '' });
  const data = new Uint8Array([0, 1, 2, 13, 10, 45, 45, 255]);
  const res = await wire.post(
    '/form',
    {
      form: [
        { name: 'file', filename: 'a"b\r\nc.wav', contentType: 'audio/wav', data },
        { name: 'model', value: 'whisper-1' },
        { name: 'evil"\r\nX-Injected: 1', value: 'v' },
      ],
    },
    { signal: signal() },
  );
  const out = JSON.parse(await res.text(10_000)) as Record<string, unknown>;
  // The parser undoes the escaping: the names come back as sent, and no part header was injected.
  assert.deepEqual(out.file, { name: 'a"b\r\nc.wav', type: 'audio/wav', bytes: [...data] });
  assert.equal(out.model, 'whisper-1');
  assert.equal(out['evil"\r\nX-Injected: 1'], 'v');
  assert.doesNotMatch((seen.at(-1) as Seen).body.toString('latin1'), /\r\nX-Injected/);
  assert.equal(Object.keys(out).length, 3);
});

test('an error answer rejects with its status, the provider message and the retry-after wait', async () => {
  const wire = createWireClient({ baseURL: url, apiKey: '' });
  const e429 = await wire.post('/429', { json: {} }, { signal: signal() }).catch((e: unknown) => e);
  assert.ok(e429 instanceof WireStatusError);
  assert.equal(e429.status, 429);
  assert.equal(e429.providerMessage, 'slow down');
  assert.equal(e429.retryAfterMs(), 2000);
  const e500 = await wire.post('/500-text', { json: {} }, { signal: signal() }).catch((e: unknown) => e);
  assert.ok(e500 instanceof WireStatusError);
  assert.equal(e500.providerMessage, 'upstream exploded');
  // Over 64 KB of error body is not read whole: the status text stands in for the message.
  const huge = await wire.post('/huge-error', { json: {} }, { signal: signal() }).catch((e: unknown) => e);
  assert.ok(huge instanceof WireStatusError);
  assert.equal(huge.providerMessage, 'Bad Thing');
  const e404 = await wire.post('/nowhere', { json: {} }, { signal: signal() }).catch((e: unknown) => e);
  assert.ok(e404 instanceof WireStatusError && e404.status === 404);
});

test('a refused connection rejects with WireConnectionError', async () => {
  const probe = http.createServer();
  probe.listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const port = (probe.address() as AddressInfo).port;
  probe.close();
  await once(probe, 'close');
  const wire = createWireClient({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: '' });
  const err = await wire.post('/echo', { json: {} }, { signal: signal() }).catch((e: unknown) => e);
  assert.ok(err instanceof WireConnectionError, String(err));
  assert.match(err.message, /ECONNREFUSED/);
  assert.equal(err.midAnswer, false);
});

test('an abort before the headers rejects as Aborted and closes the request', async () => {
  const wire = createWireClient({ baseURL: url, apiKey: '' });
  const ac = new AbortController();
  const before = closedResponses;
  const p = wire.post('/no-headers', { json: {} }, { signal: ac.signal });
  setTimeout(() => ac.abort(new Error('bye')), 50);
  const err = await p.catch((e: unknown) => e);
  assert.ok(isAbortError(err), String(err));
  await untilClosed(before + 1);
  assert.equal(closedResponses, before + 1, 'the server saw the request go away');
  const already = await wire.post('/echo', { json: {} }, { signal: ac.signal }).catch((e: unknown) => e);
  assert.ok(isAbortError(already), 'an aborted signal sends nothing');
});

test('an abort mid-body ends the events as Aborted and closes the connection', async () => {
  const wire = createWireClient({ baseURL: url, apiKey: '' });
  const ac = new AbortController();
  const before = closedResponses;
  const res = await wire.post('/hang', { json: {} }, { signal: ac.signal });
  const got: unknown[] = [];
  const err = await (async () => {
    for await (const o of sseJson(res)) {
      got.push(o);
      ac.abort();
    }
  })().catch((e: unknown) => e);
  assert.deepEqual(got, [{ n: 1 }]);
  assert.ok(isAbortError(err), String(err));
  await untilClosed(before + 1);
  assert.equal(closedResponses, before + 1);
});

test('a consumer that stops reading early closes the connection', async () => {
  const wire = createWireClient({ baseURL: url, apiKey: '' });
  const before = closedResponses;
  const res = await wire.post('/hang', { json: {} }, { signal: signal() });
  for await (const o of sseJson(res)) {
    assert.deepEqual(o, { n: 1 });
    break;
  }
  await untilClosed(before + 1);
  assert.equal(closedResponses, before + 1);
});

test('a connection lost mid-body fails the body with WireConnectionError', async () => {
  const wire = createWireClient({ baseURL: url, apiKey: '' });
  const res = await wire.post('/cut', { json: {} }, { signal: signal() });
  let bytes = 0;
  const err = await (async () => {
    for await (const c of res.chunks()) bytes += c.length;
  })().catch((e: unknown) => e);
  assert.equal(bytes, 100);
  assert.ok(err instanceof WireConnectionError, String(err));
  assert.equal(err.midAnswer, true);
});

test('text() refuses an answer over its limit', async () => {
  const wire = createWireClient({ baseURL: url, apiKey: '' });
  const res = await wire.post('/echo', { json: {} }, { signal: signal() });
  await assert.rejects(res.text(5), WireConnectionError);
});

test('events split anywhere (even inside a CRLF) arrive whole; comments, blank data and [DONE] are handled', async () => {
  const stream = ': keep-alive\r\n\r\ndata: {"a":1}\r\n\r\ndata: {"b":\ndata: 2}\n\nevent: message\ndata: {"c":3}\r\rdata: [DONE]\n\ndata: {"after":1}\n\n';
  // Cut into pieces of 3 characters: boundaries fall inside fields, between CR and LF, inside JSON.
  ssePieces = stream.match(/[\s\S]{1,3}/g) ?? [];
  const wire = createWireClient({ baseURL: url, apiKey: '' });
  assert.deepEqual(await collect(await wire.post('/sse', { json: {} }, { signal: signal() })), [{ a: 1 }, { b: 2 }, { c: 3 }]);
  // A CRLF cut between its CR and LF inside a multi-line event is one line end, not an empty line.
  ssePieces = ['data: {"b":\r', '\ndata: 2}\r\n\r\n'];
  assert.deepEqual(await collect(await wire.post('/sse', { json: {} }, { signal: signal() })), [{ b: 2 }]);
});

test('a stream read to its [DONE] leaves the connection reusable for the next request', async () => {
  const wire = createWireClient({ baseURL: url, apiKey: '' });
  for (let i = 0; i < 2; i++) {
    // [DONE] and the end of the body arrive apart, as from a real server.
    ssePieces = ['data: {"n":1}\n\n', 'data: [DONE]\n\n'];
    assert.deepEqual(await collect(await wire.post('/sse', { json: {} }, { signal: signal() })), [{ n: 1 }]);
  }
  const [a, b] = seen.slice(-2) as [Seen, Seen];
  assert.equal(a.socketPort, b.socketPort, 'one keep-alive connection for both streams');
});

test('an error event, an error object or a non-JSON payload fails the stream with WireStreamError', async () => {
  const wire = createWireClient({ baseURL: url, apiKey: '' });
  const cases: Array<[string, RegExp, boolean]> = [
    ['data: {"x":1}\n\nevent: error\ndata: {"message":"overloaded"}\n\n', /overloaded/, false],
    ['data: {"error":{"message":"quota gone","type":"x"}}\n\n', /quota gone/, false],
    ['data: {not json\n\n', /not JSON/, true],
  ];
  for (const [stream, message, malformed] of cases) {
    ssePieces = [stream];
    const got: unknown[] = [];
    const err = await (async () => {
      for await (const o of sseJson(await wire.post('/sse', { json: {} }, { signal: signal() }))) got.push(o);
    })().catch((e: unknown) => e);
    assert.ok(err instanceof WireStreamError, String(err));
    assert.match(err.providerMessage, message);
    assert.equal(err.malformed, malformed, 'a provider error may be retried, an unreadable stream not');
  }
});

test('an event that never ends is cut at 1 MB, not held forever', async () => {
  ssePieces = ['data: "', ...Array.from({ length: 40 }, () => 'x'.repeat(32 * 1024))];
  const wire = createWireClient({ baseURL: url, apiKey: '' });
  const err = await collect(await wire.post('/sse', { json: {} }, { signal: signal() })).catch((e: unknown) => e);
  assert.ok(err instanceof WireStreamError, String(err));
  assert.match(err.message, /exceeded/);
});

/** A server of its own whose requests after the first are answered by closing the connection. */
async function closingServer(closeFrom: number, closeUntil: number): Promise<{ url: string; ports: number[]; close(): void }> {
  const ports: number[] = [];
  const srv = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      ports.push(req.socket.remotePort ?? 0);
      const n = ports.length;
      // As a server that has just closed its idle side of a kept-alive connection.
      if (n >= closeFrom && n <= closeUntil) return void req.socket.destroy();
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ n }));
    });
  });
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  return {
    url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}/v1`,
    ports,
    close: () => {
      srv.closeAllConnections();
      srv.close();
    },
  };
}

test('a request on a kept-alive connection the server has closed is sent once more on a new one', async () => {
  const srv = await closingServer(2, 2);
  try {
    const wire = createWireClient({ baseURL: srv.url, apiKey: '' });
    assert.equal(await (await wire.post('/x', { json: 1 }, { signal: signal() })).text(100), '{"n":1}');
    assert.equal(await (await wire.post('/x', { json: 2 }, { signal: signal() })).text(100), '{"n":3}');
    const [first, reused, fresh] = srv.ports;
    assert.equal(srv.ports.length, 3);
    assert.equal(reused, first, 'the second request went out on the kept-alive connection');
    assert.notEqual(fresh, first, 'and was sent again on a new one');
  } finally {
    srv.close();
  }
});

test('a request is sent again only once, and only after a kept-alive connection failed', async () => {
  const srv = await closingServer(2, Infinity);
  try {
    const wire = createWireClient({ baseURL: srv.url, apiKey: '' });
    await (await wire.post('/x', { json: 1 }, { signal: signal() })).text(100);
    await assert.rejects(wire.post('/x', { json: 2 }, { signal: signal() }), WireConnectionError);
    assert.equal(srv.ports.length, 3, 'the reused connection and one new one, no more');
    // A new connection that fails is the server's answer: not sent again.
    const fresh = createWireClient({ baseURL: srv.url, apiKey: '' });
    const agentIdle = srv.ports.length;
    await assert.rejects(fresh.post('/x', { json: 3 }, { signal: signal() }), WireConnectionError);
    assert.equal(srv.ports.length, agentIdle + 1);
  } finally {
    srv.close();
  }
});

test('a pause longer than the idle-socket timeout inside an answer does not cut it (a thinking model)', async () => {
  const wire = createWireClient({ baseURL: url, apiKey: '' });
  assert.deepEqual(await collect(await wire.post('/pause', { json: {} }, { signal: signal() })), [{ n: 1 }, { n: 2 }]);
});
