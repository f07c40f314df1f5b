// Fixture MCP servers (test/fixtures/mcp-fixture-server.ts) as real peers: paged tool lists,
// a server that crashes mid-call (error result, reconnect, next call works), one that hangs
// (timeout), one that changes its tool list (refresh, all pages), filters, naming, abort, a
// server that fails to start, and the streamable-HTTP → SSE fallback against an SSE-only server.
import { describe, test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { createMcpManager, type McpManager } from '../../../mcp/manager.ts';
import type { McpStateChange } from '../../../mcp/stats.ts';
import type { ToolResult } from '../../../mcp/contract/tool-source.ts';
import { startSseOnlyServer } from '../../fixtures/mcp-fixture-server.ts';
import { fixtureEntry, pidAlive, recordingLogger, servers } from './mcp-test-helpers.ts';
import { waitFor } from '../../helpers/wait.ts';
import { closeAll } from '../../helpers/close-all.ts';

const sig = (): AbortSignal => new AbortController().signal;
const text = (r: ToolResult): string => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');

describe('fixture servers over stdio', () => {
  const log = recordingLogger();
  const changes: McpStateChange[] = [];
  const pids: number[] = [];
  let m: McpManager;

  before(async () => {
    m = createMcpManager({
      log,
      reconnect: { initialMs: 100, maxMs: 400 },
      listChangedDebounceMs: 50,
      servers: servers({
        paged: fixtureEntry(['--tools', '25', '--page-size', '7']),
        flaky: fixtureEntry([], { timeoutMs: 600 }),
        filtered: fixtureEntry([], { includeTools: ['echo', 'tool_*', 'grow*'], excludeTools: ['tool_001'] }),
        'weird name!': fixtureEntry([], { includeTools: ['echo'] }),
        broken: { command: '/definitely/not/a/command' },
        off: { command: '/also/not/a/command', enabled: false },
      }),
    });
    m.onStateChange((c) => changes.push(c));
    await m.start();
    for (const s of m.status()) if (s.pid !== undefined) pids.push(s.pid);
  });
  after(async () => {
    await closeAll(m);
    // Every child process ever spawned must be gone (including the crashed one's successor).
    for (const s of m.status()) if (s.pid !== undefined) pids.push(s.pid);
    for (const pid of pids) assert.equal(pidAlive(pid), false, `child ${pid} still alive`);
  });

  test('a server that fails to start is logged and skipped; the others work', () => {
    const byName = Object.fromEntries(m.status().map((s) => [s.name, s]));
    // Failed, or already in its next attempt (reconnects start ~100 ms after a failure here, and a
    // busy machine can read the state after that): never ready, and its error is kept.
    assert.ok(
      byName.broken?.state === 'failed' || byName.broken?.state === 'connecting',
      `broken: ${byName.broken?.state}`,
    );
    assert.match(byName.broken?.lastError ?? '', /ENOENT/);
    assert.equal(byName.off, undefined, 'disabled servers are not started');
    for (const n of ['paged', 'flaky', 'filtered', 'weird name!']) assert.equal(byName[n]?.state, 'ready', n);
    assert.ok(
      log.records.some((r) => r.level === 'warn' && r.msg === 'mcp server state changed' && r.obj.error !== undefined),
    );
    assert.ok(changes.some((c) => c.server === 'broken' && c.state === 'failed'));
  });

  test('tools/list follows cursors over several pages and hides task-only tools', async () => {
    const names = (await m.sessionView().listTools()).map((t) => t.name).filter((n) => n.startsWith('paged__'));
    // 9 fixed tools + 25 fillers, task-only tool hidden: 34 tools over 5 pages of 7.
    assert.equal(names.length, 34);
    assert.ok(names.includes('paged__tool_024'));
    assert.ok(!names.includes('paged__needs_tasks'));
  });

  test('include/exclude filters and name sanitizing', async () => {
    const names = (await m.sessionView().listTools()).map((t) => t.name);
    assert.deepEqual(
      names.filter((n) => n.startsWith('filtered__')),
      ['filtered__echo', 'filtered__grow'],
    );
    assert.ok(names.includes('weird_name___echo'));
    const r = await m.sessionView().callTool('weird_name___echo', { text: 'mapped back' }, { signal: sig() });
    assert.equal(text(r), 'echo: mapped back');
  });

  test('unknown tool and non-object arguments are error results', async () => {
    const ts = m.sessionView();
    const r1 = await ts.callTool('nope__nothing', {}, { signal: sig() });
    assert.equal(r1.isError, true);
    assert.match(text(r1), /Unknown tool/);
    const r2 = await ts.callTool('paged__echo', [] as unknown as Record<string, unknown>, { signal: sig() });
    assert.equal(r2.isError, true);
  });

  test('a hanging tool times out as an error result', async () => {
    const started = performance.now();
    const r = await m.sessionView().callTool('flaky__hang', {}, { signal: sig() });
    assert.equal(r.isError, true);
    assert.match(text(r), /timed out after 600 ms/);
    // The tool never answers: a sanity bound; the message names the 600 ms timeout that fired.
    assert.ok(performance.now() - started < 10_000);
    assert.ok((m.stats().flaky?.timeouts ?? 0) >= 1);
    // The connection survives a timeout.
    const ok = await m.sessionView().callTool('flaky__echo', { text: 'still here' }, { signal: sig() });
    assert.equal(text(ok), 'echo: still here');
  });

  test("the turn's AbortSignal cancels a call at once", async () => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error('barge-in')), 100);
    const started = performance.now();
    const r = await m.sessionView().callTool('paged__hang', {}, { signal: ac.signal, timeoutMs: 20_000 });
    assert.equal(r.isError, true);
    assert.match(text(r), /cancelled/);
    // Well under the call's own 20 s timeout: the abort ended it, on a machine however loaded.
    assert.ok(performance.now() - started < 10_000);
  });

  test('a server that crashes mid-call: error result, reconnect, next call works', async () => {
    const oldPid = m.status().find((s) => s.name === 'flaky')?.pid;
    const r = await m.sessionView().callTool('flaky__crash', {}, { signal: sig() });
    assert.equal(r.isError, true);
    assert.match(text(r), /disconnected|closed/i);
    const down = await m.sessionView().callTool('flaky__echo', { text: 'x' }, { signal: sig() });
    if (down.isError) assert.match(text(down), /not connected/);
    await waitFor(() => m.status().find((s) => s.name === 'flaky')?.state === 'ready', {
      what: 'flaky to reconnect',
      timeoutMs: 8000,
    });
    const newPid = m.status().find((s) => s.name === 'flaky')?.pid;
    assert.notEqual(newPid, oldPid);
    if (newPid !== undefined) pids.push(newPid);
    const again = await m.sessionView().callTool('flaky__echo', { text: 'back' }, { signal: sig() });
    assert.equal(again.isError, false);
    assert.equal(text(again), 'echo: back');
    assert.equal(m.stats().flaky?.reconnects, 1);
    assert.ok(changes.some((c) => c.server === 'flaky' && c.state === 'failed'));
  });

  test('tools/list_changed refreshes the list (debounced, all pages)', async () => {
    const ts = m.sessionView();
    const before = (await ts.listTools()).filter((t) => t.name.startsWith('paged__')).length;
    const r = await ts.callTool('paged__grow', {}, { signal: sig() });
    assert.equal(text(r), 'added grown_1');
    await waitFor(async () => (await ts.listTools()).some((t) => t.name === 'paged__grown_1'), {
      what: 'the new tool',
      timeoutMs: 5000,
    });
    assert.equal((await ts.listTools()).filter((t) => t.name.startsWith('paged__')).length, before + 1);
    const called = await ts.callTool('paged__grown_1', {}, { signal: sig() });
    assert.equal(text(called), 'grown_1 ran');
  });

  test('stats count calls, errors and latency per server', () => {
    const s = m.stats().flaky;
    assert.ok(s);
    assert.ok(s.calls >= 4);
    assert.ok(s.errors >= 2);
    assert.ok(s.latencyCount === s.calls && s.latencyMsSum > 0);
  });
});

describe('streamable HTTP → SSE fallback', () => {
  let srv: Awaited<ReturnType<typeof startSseOnlyServer>>;
  let m: McpManager;
  const log = recordingLogger();
  before(async () => {
    srv = await startSseOnlyServer();
    m = createMcpManager({ log, servers: servers({ legacy: { url: srv.url } }) });
    await m.start();
  });
  after(async () => {
    await closeAll(m, srv);
  });

  test('auto falls back to SSE on 404 and the tools work', async () => {
    const [s] = m.status();
    assert.equal(s?.state, 'ready');
    assert.equal(s?.transport, 'sse');
    assert.ok(
      log.records.some((r) => r.msg === 'mcp streamable http refused, falling back to sse' && r.obj.status === 404),
    );
    const r = await m.sessionView().callTool('legacy__echo', { text: 'over sse' }, { signal: sig() });
    assert.equal(text(r), 'echo: over sse');
  });

  test('explicit streamable-http does not fall back', async () => {
    const m2 = createMcpManager({
      log,
      reconnect: { initialMs: 60_000, maxMs: 60_000 },
      servers: servers({ strict: { url: srv.url, transport: 'streamable-http' } }),
    });
    await m2.start();
    assert.equal(m2.status()[0]?.state, 'failed');
    await m2.close();
  });
});
