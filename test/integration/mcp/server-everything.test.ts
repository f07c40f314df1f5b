// The reference server @modelcontextprotocol/server-everything as a real peer, over stdio, legacy
// SSE and streamable HTTP: tools listed and called through the ToolSource, resources paged and read,
// subscribe + update invalidating the cache, and no child process left behind.
import { describe, test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { createMcpManager, type McpManager } from '../../../mcp/manager.ts';
import {
  EVERYTHING,
  pidAlive,
  recordingLogger,
  resourcesOf,
  servers,
  startEverythingHttp,
} from './mcp-test-helpers.ts';
import { waitFor } from '../../helpers/wait.ts';

function signal(): AbortSignal {
  return new AbortController().signal;
}

async function assertToolsWork(m: McpManager, prefix: string): Promise<void> {
  const ts = m.sessionView();
  const names = (await ts.listTools()).map((t) => t.name);
  assert.ok(names.includes(`${prefix}__echo`), `echo listed: ${names.join(',')}`);
  assert.ok(names.includes(`${prefix}__get-sum`));
  for (const n of names) assert.match(n, /^[a-zA-Z0-9_-]{1,64}$/);
  // A tool that needs the tasks extension is hidden.
  assert.ok(!names.some((n) => n.endsWith('simulate-research-query')));
  const echo = await ts.callTool(`${prefix}__echo`, { message: 'hello' }, { signal: signal() });
  assert.equal(echo.isError, false);
  assert.deepEqual(echo.content, [{ type: 'text', text: 'Echo: hello' }]);
  const sum = await ts.callTool(`${prefix}__get-sum`, { a: 2, b: 40 }, { signal: signal() });
  assert.equal(sum.isError, false);
  assert.match(sum.content[0]?.type === 'text' ? sum.content[0].text : '', /42/);
}

describe('server-everything over stdio', () => {
  const log = recordingLogger();
  let m: McpManager;
  before(async () => {
    process.env.MCP_TEST_PARENT_SECRET = 'must-not-leak';
    m = createMcpManager({
      log,
      servers: servers({
        everything: {
          command: process.execPath,
          args: [EVERYTHING],
          env: { MCP_TEST_MARKER: 'passed-through' },
          resources: { tools: true, subscribe: true },
        },
      }),
    });
    await m.start();
  });
  after(async () => {
    delete process.env.MCP_TEST_PARENT_SECRET;
    await m.close();
  });

  test('connects and reports ready', () => {
    const [s] = m.status();
    assert.equal(s?.state, 'ready');
    assert.equal(s?.transport, 'stdio');
    assert.ok((s?.tools ?? 0) >= 10);
  });

  test('tools are listed and called through the ToolSource', () => assertToolsWork(m, 'everything'));

  test('the configured env reaches the child, our own env does not', async () => {
    const r = await m.sessionView().callTool('everything__get-env', {}, { signal: signal() });
    const text = r.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
    assert.match(text, /MCP_TEST_MARKER/);
    assert.match(text, /passed-through/);
    assert.ok(!text.includes('MCP_TEST_PARENT_SECRET'), 'the parent environment must not leak into the server');
  });

  test('content blocks are normalized: image, resource_link, embedded blob, structuredContent', async () => {
    const ts = m.sessionView();
    const img = await ts.callTool('everything__get-tiny-image', {}, { signal: signal() });
    const image = img.content.find((c) => c.type === 'image');
    assert.ok(image && image.type === 'image' && image.mimeType === 'image/png' && image.data.length > 100);
    const links = await ts.callTool('everything__get-resource-links', { count: 3 }, { signal: signal() });
    assert.equal(links.content.filter((c) => c.type === 'resource_link').length, 3);
    const blob = await ts.callTool(
      'everything__get-resource-reference',
      { resourceType: 'Blob', resourceId: 3 },
      { signal: signal() },
    );
    const emb = blob.content.find((c) => c.type === 'resource');
    assert.ok(emb && emb.type === 'resource' && typeof emb.resource.blob === 'string');
    const structured = await ts.callTool(
      'everything__get-structured-content',
      { location: 'New York' },
      { signal: signal() },
    );
    assert.equal(structured.isError, false);
    assert.equal(typeof structured.structuredContent?.temperature, 'number');
  });

  test('bad arguments and unknown tools become error results', async () => {
    const ts = m.sessionView();
    const bad = await ts.callTool('everything__echo', { message: 5 }, { signal: signal() });
    assert.equal(bad.isError, true);
    assert.match(bad.content[0]?.type === 'text' ? bad.content[0].text : '', /Invalid arguments|validation/i);
    const unknown = await ts.callTool('everything__nope', {}, { signal: signal() });
    assert.equal(unknown.isError, true);
  });

  test('resources are listed, templates listed, reads return text and blobs', async () => {
    const src = await resourcesOf(m, 'everything__echo', { message: 'x' });
    assert.ok(src);
    const list = await src.listResources();
    assert.ok(list.length >= 7);
    assert.ok(list.every((r) => r.uri.startsWith('demo://')));
    const templates = await src.listResourceTemplates();
    assert.ok(templates.some((t) => t.uriTemplate === 'demo://resource/dynamic/text/{resourceId}'));
    const [text] = await src.readResource('demo://resource/dynamic/text/1', { arguments: { ignored: true } });
    assert.match(text?.text ?? '', /Resource 1/);
    const [blob] = await src.readResource('demo://resource/dynamic/blob/2');
    assert.match(Buffer.from(blob?.blob ?? '', 'base64').toString(), /Resource 2/);
    await assert.rejects(src.readResource('demo://resource/does-not-exist'), (e: Error) =>
      /not found|failed/i.test(e.message),
    );
  });

  test('subscribe + resources/updated invalidates the cache', async () => {
    const uri = 'demo://resource/dynamic/text/1';
    const ts = m.sessionView();
    const before = m.stats().everything?.cacheMisses ?? 0;
    const r1 = await ts.callTool('everything__resources_read', { uri }, { signal: signal() });
    assert.equal(r1.isError, false);
    assert.ok(m.cache.has('everything', uri));
    const r2 = await ts.callTool('everything__resources_read', { uri }, { signal: signal() });
    assert.deepEqual(r2, r1);
    assert.ok((m.stats().everything?.cacheHits ?? 0) >= 1);
    assert.equal(m.stats().everything?.cacheMisses, before + 1);
    // The server sends resources/updated for subscribed URIs right after this toggle.
    await ts.callTool('everything__toggle-subscriber-updates', {}, { signal: signal() });
    await waitFor(() => !m.cache.has('everything', uri), {
      what: 'the update notification to drop the entry',
      timeoutMs: 8000,
    });
    await ts.callTool('everything__toggle-subscriber-updates', {}, { signal: signal() });
  });

  test('resources_read refuses URIs the server never listed, linked or templated', async () => {
    const r = await m
      .sessionView()
      .callTool('everything__resources_read', { uri: 'file:///etc/passwd' }, { signal: signal() });
    assert.equal(r.isError, true);
    assert.match(r.content[0]?.type === 'text' ? r.content[0].text : '', /Refused/);
  });
});

describe('server-everything over HTTP', () => {
  const log = recordingLogger();
  const cleanups: Array<() => Promise<void>> = [];
  after(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  test('streamable HTTP: tools listed and called', async () => {
    const srv = await startEverythingHttp('streamableHttp');
    cleanups.push(srv.close);
    const m = createMcpManager({ log, servers: servers({ web: { url: srv.url, transport: 'streamable-http' } }) });
    cleanups.push(() => m.close());
    await m.start();
    assert.equal(m.status()[0]?.transport, 'streamable-http');
    await assertToolsWork(m, 'web');
  });

  test('legacy SSE: explicit transport and auto fallback both work', async () => {
    const srv = await startEverythingHttp('sse');
    cleanups.push(srv.close);
    const m = createMcpManager({
      log,
      servers: servers({ sse: { url: srv.url, transport: 'sse' }, auto: { url: srv.url } }),
    });
    cleanups.push(() => m.close());
    await m.start();
    assert.deepEqual(
      m.status().map((s) => [s.name, s.state, s.transport]),
      [
        ['sse', 'ready', 'sse'],
        ['auto', 'ready', 'sse'],
      ],
    );
    await assertToolsWork(m, 'sse');
    await assertToolsWork(m, 'auto');
    assert.ok(log.records.some((r) => r.msg === 'mcp streamable http refused, falling back to sse'));
  });
});

test('no stdio child survives close()', async () => {
  const m = createMcpManager({
    log: recordingLogger(),
    servers: servers({ a: { command: process.execPath, args: [EVERYTHING] } }),
  });
  await m.start();
  const pid = m.status()[0]?.pid;
  assert.ok(pid !== undefined && pidAlive(pid));
  const started = performance.now();
  await m.close();
  assert.ok(performance.now() - started < 6000, 'close is bounded');
  assert.equal(m.status()[0]?.state, 'closed');
  assert.equal(pidAlive(pid), false);
});
