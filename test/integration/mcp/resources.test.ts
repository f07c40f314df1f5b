// Resources against the fixture server (stdio): paged listing, the ResourceSource, the
// ResourceCache (inline/stub rendering, subscribe + update and list_changed invalidation),
// context injection with policy and budget, and the generated resource tools' URI policy.
import { describe, test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { createMcpManager, type McpManager } from '../../../mcp/manager.ts';
import type { ToolResult } from '../../../mcp/contract/tool-source.ts';
import { toolResultText } from '../../../llm/tool-results.ts';
import { fixtureEntry, parseContextBlock, recordingLogger, resourcesOf, servers } from './mcp-test-helpers.ts';
import { waitFor } from '../../helpers/wait.ts';

const sig = (): AbortSignal => new AbortController().signal;
const text = (r: ToolResult): string => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');

describe('MCP resources (fixture server)', () => {
  let m: McpManager;
  before(async () => {
    m = createMcpManager({
      log: recordingLogger(),
      servers: servers({
        fx: fixtureEntry([], { resources: { tools: true, context: ['fixture://notes/*'], budgetChars: 60 } }),
        all: fixtureEntry([], {
          includeTools: ['echo'],
          resources: { context: 'all', budgetChars: 100, subscribe: false },
        }),
        plain: fixtureEntry([], { includeTools: ['echo'] }),
      }),
    });
    await m.start();
  });
  after(() => m.close());

  test('resources/list is followed over all pages', async () => {
    const list = await (await resourcesOf(m, 'fx__echo', { text: 'x' })).listResources();
    assert.equal(list?.length, 28);
    assert.ok(list?.some((r) => r.uri === 'fixture://items/25'));
  });

  test('ResourceSource reads text and blobs, passes arguments, and rejects unknown URIs', async () => {
    const src = await resourcesOf(m, 'fx__echo', { text: 'x' });
    assert.ok(src);
    const [item] = await src.readResource('fixture://items/4', { arguments: { page: 2 } });
    assert.equal(item?.text, 'Item 4 body');
    const [beep] = await src.readResource('fixture://bin/beep');
    assert.equal(beep?.mimeType, 'audio/wav');
    assert.ok(beep?.blob);
    await assert.rejects(src.readResource('fixture://items/999'), /no item 999/);
    const templates = await src.listResourceTemplates();
    assert.deepEqual(
      templates.map((t) => t.uriTemplate),
      ['fixture://racy/{id}', 'fixture://items/{id}'],
    );
  });

  test('ResourceSource.subscribe delivers updates until unsubscribed', async () => {
    const src = await resourcesOf(m, 'fx__echo', { text: 'x' });
    let updates = 0;
    const unsubscribe = await src?.subscribe?.('fixture://items/7', () => updates++);
    assert.ok(unsubscribe);
    await m.sessionView().callTool('fx__bump', { uri: 'fixture://items/7' }, { signal: sig() });
    await waitFor(() => updates === 1, { what: 'the update notification' });
    await unsubscribe();
    const r = await m.sessionView().callTool('fx__bump', { uri: 'fixture://items/7' }, { signal: sig() });
    assert.match(text(r), /no subscriber/);
  });

  test('generated tools exist only where configured', async () => {
    const names = (await m.sessionView().listTools()).map((t) => t.name);
    assert.ok(names.includes('fx__resources_list'));
    assert.ok(names.includes('fx__resources_read'));
    assert.ok(names.includes('fx__resources_templates_list'));
    assert.ok(!names.some((n) => n.startsWith('all__resources') || n.startsWith('plain__resources')));
  });

  test('resources_list pages with a cursor the model can pass back', async () => {
    const ts = m.sessionView();
    const p1 = await ts.callTool('fx__resources_list', {}, { signal: sig() });
    const cursor = /cursor "([^"]+)"/.exec(text(p1))?.[1];
    assert.ok(cursor, text(p1));
    const p2 = await ts.callTool('fx__resources_list', { cursor }, { signal: sig() });
    assert.match(text(p2), /fixture:\/\/items\/8/);
    const templates = await ts.callTool('fx__resources_templates_list', {}, { signal: sig() });
    assert.match(text(templates), /fixture:\/\/items\/\{id\}/);
  });

  test('resources_read: listed, template-matched and session-linked URIs only', async () => {
    const a = m.sessionView();
    const b = m.sessionView();
    const s = sig();
    assert.equal(
      text(await a.callTool('fx__resources_read', { uri: 'fixture://notes/readme' }, { signal: s })).startsWith(
        '# Readme',
      ),
      true,
    );
    assert.equal(
      text(await a.callTool('fx__resources_read', { uri: 'fixture://items/12' }, { signal: s })),
      'Item 12 body',
    );
    const viaTemplate = await a.callTool(
      'fx__resources_read',
      { uriTemplate: 'fixture://items/{id}', variables: { id: '5' } },
      { signal: s },
    );
    assert.equal(text(viaTemplate), 'Item 5 body');
    const unlisted = await a.callTool('fx__resources_read', { uri: 'fixture://secret/unlisted' }, { signal: s });
    assert.equal(unlisted.isError, true);
    assert.match(text(unlisted), /Refused.*not listed or linked/);
    const traversal = await a.callTool('fx__resources_read', { uri: 'fixture://items/%2e%2e/secret' }, { signal: s });
    assert.equal(traversal.isError, true);
    assert.match(text(traversal), /"\.\." path segment/);
    const badTemplate = await a.callTool(
      'fx__resources_read',
      { uriTemplate: 'fixture://secret/{x}', variables: { x: 'unlisted' } },
      { signal: s },
    );
    assert.equal(badTemplate.isError, true);
    // A link in session a's tool result opens that URI for session a only.
    assert.equal(
      (await b.callTool('fx__resources_read', { uri: 'fixture://secret/linked' }, { signal: s })).isError,
      true,
    );
    const links = await a.callTool('fx__links', {}, { signal: s });
    assert.equal(links.content.filter((c) => c.type === 'resource_link').length, 2);
    // The URI is taken from what the model is shown, not handed in by the test.
    const shown = toolResultText(links);
    const linked = /"linked": (\S+)/.exec(shown)?.[1];
    assert.ok(linked, `the model sees the link's URI: ${shown}`);
    assert.equal(text(await a.callTool('fx__resources_read', { uri: linked }, { signal: s })), 'linked secret');
    assert.equal(
      (await b.callTool('fx__resources_read', { uri: 'fixture://secret/linked' }, { signal: s })).isError,
      true,
    );
  });

  test('cache: small text inline, large text and blobs as stubs; hits counted', async () => {
    const ts = m.sessionView();
    const big = text(await ts.callTool('fx__resources_read', { uri: 'fixture://notes/big' }, { signal: sig() }));
    assert.match(big, /20000 chars\) is too large/);
    assert.ok(big.length < 600);
    const blob = text(await ts.callTool('fx__resources_read', { uri: 'fixture://bin/beep' }, { signal: sig() }));
    assert.match(blob, /binary resource fixture:\/\/bin\/beep \(audio\/wav, about \d+ bytes\) not shown/);
    const hits = m.stats().fx?.cacheHits ?? 0;
    await ts.callTool('fx__resources_read', { uri: 'fixture://notes/big' }, { signal: sig() });
    assert.equal(m.stats().fx?.cacheHits, hits + 1);
  });

  test('subscribe + resources/updated invalidates the cached entry', async () => {
    const ts = m.sessionView();
    const uri = 'fixture://notes/readme';
    const first = text(await ts.callTool('fx__resources_read', { uri }, { signal: sig() }));
    assert.ok(m.cache.has('fx', uri));
    assert.equal(text(await ts.callTool('fx__resources_read', { uri }, { signal: sig() })), first, 'served from cache');
    const bumped = await ts.callTool('fx__bump', { uri }, { signal: sig() });
    assert.equal(text(bumped), `notified ${uri}`, 'the cache subscribed to the resource');
    await waitFor(() => !m.cache.has('fx', uri), { what: 'the entry to leave the cache' });
    const fresh = text(await ts.callTool('fx__resources_read', { uri }, { signal: sig() }));
    assert.notEqual(fresh, first, 'read again from the server');
  });

  test('resources/list_changed drops the server’s cached entries', async () => {
    const ts = m.sessionView();
    await ts.callTool('fx__resources_read', { uri: 'fixture://items/2' }, { signal: sig() });
    assert.ok(m.cache.has('fx', 'fixture://items/2'));
    await ts.callTool('fx__relist', {}, { signal: sig() });
    await waitFor(() => !m.cache.has('fx', 'fixture://items/2'), { what: 'fixture://items/2 to leave the cache' });
  });

  test('a server with subscribe: false keeps its context reads cached (their subscription check is on the server, in the cache suite below)', async () => {
    await m.contextFor();
    assert.ok(m.cache.has('all', 'fixture://notes/readme'));
  });

  test('context injection follows policy and budget', async () => {
    const strings = await m.contextFor();
    const blocks = strings.map(parseContextBlock);
    const fx = blocks.filter((b) => b.server === 'fx');
    assert.deepEqual(
      fx.map((b) => b.uri),
      ['fixture://notes/readme', 'fixture://notes/big'],
    );
    assert.equal(
      fx.reduce((n, b) => n + b.text.length, 0),
      60,
    );
    assert.equal(fx[1]?.truncated, true);
    const all = blocks.filter((b) => b.server === 'all');
    assert.ok(all.length >= 1);
    assert.ok(all.reduce((n, b) => n + b.text.length, 0) <= 100);
    assert.ok(!blocks.some((b) => b.server === 'plain'));
    assert.ok(
      strings.some((s) => s.startsWith('Context from resource fixture://notes/readme (MCP server "fx"):\n# Readme')),
    );
  });
});

describe('MCP resource cache: freshness and subscriptions (fixture server)', () => {
  let m: McpManager;
  /** The cache's clock (ms): expiry is a matter of this number, not of real time. */
  let now = 0;
  before(async () => {
    m = createMcpManager({
      log: recordingLogger(),
      cache: { maxEntries: 2, now: () => now },
      servers: servers({
        sub: fixtureEntry([], { resources: { tools: true } }),
        nosub: fixtureEntry([], { resources: { tools: true, subscribe: false, cacheTtlMs: 300 } }),
      }),
    });
    await m.start();
  });
  after(() => m.close());

  const read = (server: string, uri: string, more: Record<string, unknown> = {}): Promise<ToolResult> =>
    m.sessionView().callTool(`${server}__resources_read`, { uri, ...more }, { signal: sig() });
  /** What the server itself holds subscriptions for (not what we believe we sent). */
  const subscriptions = async (server: string): Promise<string[]> =>
    JSON.parse(text(await m.sessionView().callTool(`${server}__subscriptions`, {}, { signal: sig() }))) as string[];

  test('a resource updated while it is first read is read again; the fresh version is what gets cached', async () => {
    const uri = 'fixture://racy/a';
    assert.equal(text(await read('sub', uri)), `${uri} version 2`);
    assert.equal(text(await read('sub', uri)), `${uri} version 2`, 'served from the cache, and not stale');
    assert.ok(m.cache.has('sub', uri));
  });

  test('entries evicted from the LRU are unsubscribed on the server', async () => {
    m.cache.clear();
    for (const id of ['1', '2', '3']) await read('sub', `fixture://items/${id}`);
    const held = (await subscriptions('sub')).filter((u) => u.startsWith('fixture://items/'));
    assert.deepEqual(held, ['fixture://items/2', 'fixture://items/3']);
  });

  test('without subscriptions: nothing is subscribed on the server, a read expires after cacheTtlMs, use_cache: false bypasses', async () => {
    const uri = 'fixture://racy/b';
    // The server announces the change during the first read even unsubscribed: read again.
    assert.equal(text(await read('nosub', uri)), `${uri} version 2`);
    assert.deepEqual(await subscriptions('nosub'), []);
    assert.equal(text(await read('nosub', uri)), `${uri} version 2`, 'cached while fresh');
    assert.equal(text(await read('nosub', uri, { use_cache: false })), `${uri} version 3`, 'bypassed on request');
    assert.equal(text(await read('nosub', uri)), `${uri} version 3`, 'the bypass refreshed the entry');
    now += 299;
    assert.equal(text(await read('nosub', uri)), `${uri} version 3`, 'fresh until cacheTtlMs (300 ms) has passed');
    now += 1;
    assert.equal(text(await read('nosub', uri)), `${uri} version 4`, 'expired after cacheTtlMs');
  });

  test('updates match on URI boundaries: …/1 is not notified by …/12, but is by …/1/part', async () => {
    const src = await resourcesOf(m, 'sub__echo', { text: 'x' });
    assert.ok(src?.subscribe);
    const seen: number[] = [];
    let n = 0;
    const off = await src.subscribe('fixture://items/1', () => seen.push(n));
    try {
      const notify = async (uri: string): Promise<void> => {
        n++;
        await m.sessionView().callTool('sub__notify', { uri }, { signal: sig() });
        // A ping after the notification: it is processed by the time the reply is.
        await m.sessionView().callTool('sub__notify', { uri: 'fixture://elsewhere' }, { signal: sig() });
      };
      await notify('fixture://items/12');
      await notify('fixture://items/1');
      await notify('fixture://items/1/part');
      assert.deepEqual(seen, [2, 3]);
    } finally {
      await off();
    }
  });
});
