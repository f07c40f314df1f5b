/** The node:http fetch the openai SDK is given (providers/openai/http-fetch.ts), against real loopback HTTP servers. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { isAbortError } from '../../../../core/errors.ts';
import { createOpenAiClient } from '../../../../providers/openai/client.ts';
import { AnswerCutError, AnswerTooLargeError, httpFetch } from '../../../../providers/openai/http-fetch.ts';

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
      switch ((req.url ?? '').replace(/^\/v1/, '')) {
        case '/echo':
          res.setHeader('content-type', 'application/json');
          res.end(JSON.stringify({ ok: true, bytes: body.length }));
          return;
        case '/big':
          res.setHeader('content-type', 'application/json');
          res.end(Buffer.alloc(1100 * 1024, 32));
          return;
        case '/form': {
          // The platform's own multipart parser reads the body back.
          const request = new Request('http://x/', {
            method: 'POST',
            body,
            headers: { 'content-type': req.headers['content-type'] ?? '' },
          });
          void request.formData().then(
            async (form) => {
              const out: Record<string, unknown> = {};
              const entries: Array<[string, FormDataEntryValue]> = [];
              form.forEach((v, k) => entries.push([k, v]));
              for (const [k, v] of entries)
                out[k] =
                  typeof v === 'string'
                    ? v
                    : { name: v.name, type: v.type, bytes: [...new Uint8Array(await v.arrayBuffer())] };
              res.end(JSON.stringify(out));
            },
            (err: Error) => res.writeHead(400).end(err.message),
          );
          return;
        }
        case '/chat/completions': {
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
        case '/done-hang/chat/completions':
          // The end marker, then neither the body's end nor anything else.
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write(
            `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'Hi' } }] })}\n\ndata: [DONE]\n\n`,
          );
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

const post = (path: string, init: RequestInit = {}): Promise<Response> =>
  httpFetch(`${url}${path}`, { method: 'POST', body: '{}', ...init });

async function untilClosed(count: number): Promise<void> {
  for (let i = 0; i < 200 && closedResponses < count; i++) await new Promise((r) => setTimeout(r, 10));
}

test('a POST sends its headers and body as given, asks for no compression, and sequential requests reuse one connection', async () => {
  const res = await post('/echo', {
    headers: { authorization: 'Bearer sk-1', 'x-extra': 'yes', 'content-type': 'application/json' },
    body: '{"a":1}',
  });
  assert.deepEqual(await res.json(), { ok: true, bytes: 7 });
  const s = seen.at(-1) as Seen;
  assert.equal(s.headers.authorization, 'Bearer sk-1');
  assert.equal(s.headers['x-extra'], 'yes');
  assert.equal(s.headers['content-length'], '7');
  assert.equal(s.headers['accept-encoding'], 'identity');
  await (await post('/echo')).text();
  const [a, b] = seen.slice(-2) as [Seen, Seen];
  assert.equal(a.socketPort, b.socketPort);
});

test('a FormData body goes out as multipart the platform parser reads back; a hostile name stays in its part', async () => {
  const form = new FormData();
  const data = new Uint8Array([0, 1, 2, 13, 10, 45, 45, 255]);
  form.append('file', new File([data], 'a"b\r\nc.wav', { type: 'audio/wav' }));
  form.append('model', 'whisper-1');
  form.append('evil"\r\nX-Injected: 1', 'v');
  const out = (await (await post('/form', { body: form })).json()) as Record<string, unknown>;
  // The parser undoes the escaping: the names come back as sent, and no part header was injected.
  assert.deepEqual(out.file, { name: 'a"b\r\nc.wav', type: 'audio/wav', bytes: [...data] });
  assert.equal(out.model, 'whisper-1');
  assert.equal(out['evil"\r\nX-Injected: 1'], 'v');
  assert.doesNotMatch((seen.at(-1) as Seen).body.toString('latin1'), /\r\nX-Injected/);
});

test('a refused connection rejects as undici does (TypeError "fetch failed" with the cause)', async () => {
  const probe = http.createServer();
  probe.listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const port = (probe.address() as AddressInfo).port;
  probe.close();
  await once(probe, 'close');
  const err = await httpFetch(`http://127.0.0.1:${port}/v1/echo`, { method: 'POST', body: '{}' }).catch(
    (e: unknown) => e,
  );
  assert.ok(err instanceof TypeError && err.message === 'fetch failed', String(err));
  assert.match(String((err.cause as Error).message), /ECONNREFUSED/);
});

test('an abort before the headers rejects with the reason and closes the request; an aborted signal sends nothing', async () => {
  const ac = new AbortController();
  const before = closedResponses;
  const p = post('/no-headers', { signal: ac.signal });
  setTimeout(() => ac.abort(new DOMException('bye', 'AbortError')), 50);
  const err = await p.catch((e: unknown) => e);
  assert.ok(isAbortError(err), String(err));
  await untilClosed(before + 1);
  assert.equal(closedResponses, before + 1, 'the server saw the request go away');
  const count = seen.length;
  assert.ok(isAbortError(await post('/echo', { signal: ac.signal }).catch((e: unknown) => e)));
  assert.equal(seen.length, count);
});

test('an abort mid-body ends the body with the reason and closes the connection; so does a consumer that stops', async () => {
  const ac = new AbortController();
  let before = closedResponses;
  const res = await post('/hang', { signal: ac.signal });
  const err = await (async () => {
    for await (const _ of res.body as unknown as AsyncIterable<Buffer>) ac.abort(new DOMException('bye', 'AbortError'));
  })().catch((e: unknown) => e);
  assert.ok(isAbortError(err), String(err));
  await untilClosed(before + 1);
  assert.equal(closedResponses, before + 1);

  before = closedResponses;
  for await (const _ of (await post('/hang')).body as unknown as AsyncIterable<Buffer>) break;
  await untilClosed(before + 1);
  assert.equal(closedResponses, before + 1);
});

test('a connection lost mid-body fails the body with AnswerCutError', async () => {
  const res = await post('/cut');
  let bytes = 0;
  const err = await (async () => {
    for await (const c of res.body as unknown as AsyncIterable<Buffer>) bytes += c.length;
  })().catch((e: unknown) => e);
  assert.equal(bytes, 100);
  assert.ok(err instanceof AnswerCutError, String(err));
});

test('a buffered answer over 1 MiB is refused', async () => {
  await assert.rejects((await post('/big')).text(), AnswerTooLargeError);
});

test('the SDK reads a stream to its [DONE] and the connection is reused; a line that never ends is cut at 1 MiB', async () => {
  const sdk = createOpenAiClient({ baseURL: url, apiKey: '' });
  const chunk = (text: string): string =>
    `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: text } }] })}\n\n`;
  for (let i = 0; i < 2; i++) {
    // [DONE] and the end of the body arrive apart, as from a real server.
    ssePieces = [chunk('Hi'), chunk(' there'), 'data: [DONE]\n\n'];
    let text = '';
    for await (const c of await sdk.chat.completions.create({ model: 'm', messages: [], stream: true }))
      text += c.choices[0]?.delta.content ?? '';
    assert.equal(text, 'Hi there');
  }
  const [a, b] = seen.slice(-2) as [Seen, Seen];
  assert.equal(a.socketPort, b.socketPort, 'one keep-alive connection for both streams');
  assert.equal(a.headers.authorization, undefined, 'no key, no Authorization header');

  ssePieces = ['data: "', ...Array.from({ length: 40 }, () => 'x'.repeat(32 * 1024))];
  const err = await (async () => {
    for await (const _ of await sdk.chat.completions.create({ model: 'm', messages: [], stream: true })) void _;
  })().catch((e: unknown) => e);
  assert.ok(err instanceof AnswerTooLargeError, String(err));
});

test('a body that does not end after [DONE]: the stream still ends at the marker, and the connection is closed after a bounded wait', async () => {
  const sdk = createOpenAiClient({ baseURL: `${url}/done-hang`, apiKey: '' });
  const before = closedResponses;
  let text = '';
  for await (const c of await sdk.chat.completions.create({ model: 'm', messages: [], stream: true }))
    text += c.choices[0]?.delta.content ?? '';
  assert.equal(text, 'Hi');
  await untilClosed(before + 1);
  assert.equal(closedResponses, before + 1, 'the connection waiting for the end was closed');
});

/** A server of its own whose requests `closeFrom`..`closeUntil` are answered by closing the connection. */
async function closingServer(
  closeFrom: number,
  closeUntil: number,
): Promise<{ url: string; ports: number[]; close(): void }> {
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

test('a request on a kept-alive connection the server has closed is sent once more on a new one, and only once', async () => {
  const srv = await closingServer(2, 2);
  try {
    const send = async (): Promise<string> => (await httpFetch(`${srv.url}/x`, { method: 'POST', body: '{}' })).text();
    assert.equal(await send(), '{"n":1}');
    assert.equal(await send(), '{"n":3}');
    const [first, reused, fresh] = srv.ports;
    assert.equal(srv.ports.length, 3);
    assert.equal(reused, first, 'the second request went out on the kept-alive connection');
    assert.notEqual(fresh, first, 'and was sent again on a new one');
  } finally {
    srv.close();
  }
  const always = await closingServer(2, Infinity);
  try {
    const send = (): Promise<Response> => httpFetch(`${always.url}/x`, { method: 'POST', body: '{}' });
    await (await send()).text();
    await assert.rejects(send(), /fetch failed/);
    assert.equal(always.ports.length, 3, 'the reused connection and one new one, no more');
  } finally {
    always.close();
  }
});
