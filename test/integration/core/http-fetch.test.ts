/** The node:http fetch handed to the openai SDK, against real loopback HTTP servers. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import zlib from 'node:zlib';
import { httpFetch } from '../../../core/http-fetch.ts';
import { encodeMultipart } from '../../../core/multipart.ts';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  socketPort: number;
}

type Handler = (req: http.IncomingMessage, res: http.ServerResponse, body: Buffer) => void;

async function startServer(handler: Handler): Promise<{ url: string; seen: Seen[]; closed: () => number; server: http.Server }> {
  const seen: Seen[] = [];
  let closedRequests = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: body.toString(), socketPort: req.socket.remotePort ?? 0 });
      handler(req, res, body);
    });
    res.on('close', () => closedRequests++);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, closed: () => closedRequests, server };
}

let main: Awaited<ReturnType<typeof startServer>>;
let other: Awaited<ReturnType<typeof startServer>>;
let releaseSlow: (() => void) | undefined;

before(async () => {
  other = await startServer((req, res) => res.end(JSON.stringify({ path: req.url, auth: req.headers.authorization ?? null })));
  main = await startServer((req, res, body) => {
    switch (req.url) {
      case '/echo':
        res.setHeader('content-type', 'application/json');
        res.setHeader('x-request-id', 'req-1');
        res.end(JSON.stringify({ method: req.method, body: body.toString() }));
        return;
      case '/stream':
        // One chunk now, the rest only when the test says so: the first must arrive on its own.
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: one\n\n');
        releaseSlow = () => res.end('data: two\n\n');
        return;
      case '/hang':
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: first\n\n');
        return;
      case '/pause':
        // Longer than the agent's idle-socket timeout (4 s), which must only close free sockets.
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: before\n\n');
        setTimeout(() => res.end('data: after\n\n'), 4_500);
        return;
      case '/cut':
        res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': '1000' });
        res.write(Buffer.alloc(100));
        setTimeout(() => res.socket?.destroy(), 20);
        return;
      case '/no-headers':
        return; // never answers
      case '/gzip':
        res.writeHead(200, { 'content-encoding': 'gzip', 'content-type': 'application/json' });
        res.end(zlib.gzipSync(JSON.stringify({ zipped: true })));
        return;
      case '/307':
        res.writeHead(307, { location: '/echo' }).end();
        return;
      case '/303':
        res.writeHead(303, { location: '/echo' }).end();
        return;
      case '/cross':
        res.writeHead(307, { location: `${other.url}/landed` }).end();
        return;
      case '/loop':
        res.writeHead(302, { location: '/loop' }).end();
        return;
      case '/empty':
        res.writeHead(204).end();
        return;
      case '/huge':
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        res.end(Buffer.alloc(33 * 1024 * 1024));
        return;
      default:
        res.writeHead(404).end('no such path');
    }
  });
});

after(() => {
  main.server.closeAllConnections();
  other.server.closeAllConnections();
  main.server.close();
  other.server.close();
});

test('a JSON POST goes out with its body and headers; the answer reads as JSON', async () => {
  const res = await httpFetch(`${main.url}/echo`, { method: 'post', headers: { 'content-type': 'application/json', authorization: 'Bearer k' }, body: '{"a":1}' });
  assert.equal(res.status, 200);
  assert.equal(res.ok, true);
  assert.equal(res.headers.get('x-request-id'), 'req-1');
  assert.deepEqual(await res.json(), { method: 'POST', body: '{"a":1}' });
  const seen = main.seen.at(-1)!;
  assert.equal(seen.headers['content-length'], '7');
  assert.equal(seen.headers.authorization, 'Bearer k');
  assert.equal(seen.headers['accept-encoding'], 'identity');
});

test('sequential requests reuse one keep-alive connection', async () => {
  const ports = new Set<number>();
  for (let i = 0; i < 3; i++) {
    const res = await httpFetch(`${main.url}/echo`, { method: 'POST', body: String(i) });
    await res.text();
    ports.add(main.seen.at(-1)!.socketPort);
  }
  assert.equal(ports.size, 1);
});

test('a streamed body yields its first chunk before the server has finished', async () => {
  const res = await httpFetch(`${main.url}/stream`, { method: 'POST', body: '{}' });
  const iterator = (res.body as unknown as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  const first = await iterator.next();
  assert.equal(Buffer.from(first.value as Buffer).toString(), 'data: one\n\n');
  releaseSlow!();
  let rest = '';
  for (let r = await iterator.next(); !r.done; r = await iterator.next()) rest += Buffer.from(r.value as Buffer).toString();
  assert.equal(rest, 'data: two\n\n');
});

test('an abort before the headers rejects with AbortError and closes the request', async () => {
  const controller = new AbortController();
  const closedBefore = main.closed();
  const pending = httpFetch(`${main.url}/no-headers`, { method: 'POST', body: 'x', signal: controller.signal });
  while (main.seen.at(-1)?.url !== '/no-headers') await new Promise((r) => setTimeout(r, 5));
  controller.abort();
  await assert.rejects(pending, { name: 'AbortError' });
  while (main.closed() === closedBefore) await new Promise((r) => setTimeout(r, 5));
});

test('an abort mid-body ends the iteration with AbortError and closes the connection', async () => {
  const controller = new AbortController();
  const closedBefore = main.closed();
  const res = await httpFetch(`${main.url}/hang`, { method: 'POST', body: '{}', signal: controller.signal });
  const chunks: string[] = [];
  await assert.rejects(
    (async () => {
      for await (const chunk of res.body as unknown as AsyncIterable<Buffer>) {
        chunks.push(chunk.toString());
        controller.abort();
      }
    })(),
    { name: 'AbortError' },
  );
  assert.deepEqual(chunks, ['data: first\n\n']);
  while (main.closed() === closedBefore) await new Promise((r) => setTimeout(r, 5));
});

test('a connection lost mid-body fails the iteration as undici does: TypeError terminated', async () => {
  const res = await httpFetch(`${main.url}/cut`, { method: 'POST', body: '{}' });
  let bytes = 0;
  await assert.rejects(
    (async () => {
      for await (const chunk of res.body as unknown as AsyncIterable<Buffer>) bytes += chunk.length;
    })(),
    (err: unknown) => err instanceof TypeError && err.message === 'terminated' && err.cause instanceof Error,
  );
  assert.equal(bytes, 100);
});

test('a pause longer than the idle-socket timeout inside a response does not cut it (a thinking model)', async () => {
  const res = await httpFetch(`${main.url}/pause`, { method: 'POST', body: '{}' });
  assert.equal(await res.text(), 'data: before\n\ndata: after\n\n');
});

test('cancelling a body before reading it (as the SDK does) closes the connection', async () => {
  const closedBefore = main.closed();
  const res = await httpFetch(`${main.url}/hang`, { method: 'POST', body: '{}' });
  await (res.body as unknown as AsyncIterable<Buffer>)[Symbol.asyncIterator]().return?.();
  const until = performance.now() + 2000;
  while (main.closed() === closedBefore && performance.now() < until) await new Promise((r) => setTimeout(r, 5));
  assert.notEqual(main.closed(), closedBefore, 'the server saw the connection close');
});

test('an already aborted signal sends nothing', async () => {
  const count = main.seen.length;
  await assert.rejects(httpFetch(`${main.url}/echo`, { method: 'POST', body: 'x', signal: AbortSignal.abort() }), { name: 'AbortError' });
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(main.seen.length, count);
});

test('a refused connection rejects as fetch does: TypeError with the cause', async () => {
  const closed = http.createServer();
  closed.listen(0, '127.0.0.1');
  await once(closed, 'listening');
  const port = (closed.address() as AddressInfo).port;
  closed.close();
  await once(closed, 'close');
  await assert.rejects(httpFetch(`http://127.0.0.1:${port}/x`), (err: unknown) => {
    assert.ok(err instanceof TypeError);
    assert.equal((err.cause as NodeJS.ErrnoException).code, 'ECONNREFUSED');
    return true;
  });
});

test('redirects: 307 keeps method and body, 303 becomes GET, credentials stay on their origin', async () => {
  const kept = await httpFetch(`${main.url}/307`, { method: 'POST', body: 'payload', headers: { authorization: 'Bearer k' } });
  assert.deepEqual(await kept.json(), { method: 'POST', body: 'payload' });
  assert.equal(kept.redirected, true);
  assert.equal(kept.url, `${main.url}/echo`);
  const changed = await httpFetch(`${main.url}/303`, { method: 'POST', body: 'payload' });
  assert.deepEqual(await changed.json(), { method: 'GET', body: '' });
  const cross = await httpFetch(`${main.url}/cross`, { method: 'POST', body: 'p', headers: { authorization: 'Bearer k' } });
  assert.deepEqual(await cross.json(), { path: '/landed', auth: null });
  await assert.rejects(httpFetch(`${main.url}/loop`), TypeError);
});

test('a gzip answer is decoded; a 204 has no body; a huge body is refused by text()', async () => {
  const zipped = await httpFetch(`${main.url}/gzip`);
  assert.deepEqual(await zipped.json(), { zipped: true });
  const empty = await httpFetch(`${main.url}/empty`, { method: 'DELETE' });
  assert.equal(empty.status, 204);
  assert.equal(empty.body, null);
  assert.equal(await empty.text(), '');
  const huge = await httpFetch(`${main.url}/huge`);
  await assert.rejects(huge.text(), /over 33554432 bytes/);
});

test('FormData is sent as multipart that the platform parser reads back', async () => {
  const form = new FormData();
  form.append('model', 'whisper-1');
  form.append('file', new File([new Uint8Array([1, 2, 3, 250])], 'a "b".wav', { type: 'audio/wav' }));
  const encoded = await encodeMultipart(form);
  const parsed = await new Response(new Uint8Array(encoded.body), { headers: { 'content-type': encoded.contentType } }).formData();
  assert.equal(parsed.get('model'), 'whisper-1');
  const file = parsed.get('file') as File;
  assert.equal(file.name, 'a "b".wav');
  assert.equal(file.type, 'audio/wav');
  assert.deepEqual([...new Uint8Array(await file.arrayBuffer())], [1, 2, 3, 250]);
});
