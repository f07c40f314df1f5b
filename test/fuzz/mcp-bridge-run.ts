/**
 * The MCP endpoint (the access point, `/mcp/`) under fast-check, bridge by bridge: each case dials
 * in as a hostile bridge (mcp-bridge-arbitraries.ts) against the real server on loopback while two
 * well-behaved bridges stay connected, one on the same agent (whose name the hostile one sometimes
 * takes) and one on another. Checked after every case:
 *   - a token that is not the agent's is refused before the upgrade (401, or 429);
 *   - the hostile connection ends with one of the endpoint's close codes, or stays open and each
 *     tool it offered answers a result (never throws) within callTimeoutMs and a margin;
 *   - what the agent's devices are offered stays within maxToolBytes and maxToolsPerAgent, with
 *     names the model accepts;
 *   - once the hostile bridge is gone, the endpoint holds nothing of it (connections per address
 *     back to the two that stay), and both well-behaved bridges are still connected and answer;
 *   - no uncaught exception and no error-level log line.
 * At the end: the heap after a full collection grew by less than HEAP_GROWTH_LIMIT_BYTES, the
 * store holds only the well-behaved bridges, and a new bridge still connects and serves.
 */
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import { WebSocket } from 'ws';
import { startTestApp, type TestApp } from '../helpers/test-app.ts';
import { recordingConversation } from '../helpers/recording-conversation.ts';
import { waitFor } from '../helpers/wait.ts';
import { connectSdkBridge, type SdkBridge } from '../fixtures/mcp-ws-bridge.ts';
import { toolSpecBytes } from '../../mcp/tool-budget.ts';
import { SAFE_TOOL_NAME } from '../../mcp/name-patterns.ts';
import { createLogWatch, type LogWatch } from './log-watch.ts';
import { watchHealth, type HealthWatch } from './health-watch.ts';
import {
  bridgeCase,
  SENTINEL_NAME,
  toolsText,
  type Answer,
  type BridgeCase,
  type Frame,
} from './mcp-bridge-arbitraries.ts';

/** Close codes the endpoint uses, and 1006 (the socket dropped: a frame over server.maxMessageBytes, or ended by us). */
const KNOWN_CLOSES = new Set([1000, 1001, 1006, 1008, 1009]);

/** Growth of the heap after a full collection over the run, bytes: a leak per case would pass it within a few hundred cases. */
export const HEAP_GROWTH_LIMIT_BYTES = 48 * 1024 * 1024;

const CALL_TIMEOUT_MS = 300;

interface Target {
  t: TestApp;
  logs: LogWatch;
  url: (token: string, name?: string) => string;
  token: string;
  same: SdkBridge;
  other: SdkBridge;
  address: string;
  health: HealthWatch;
  stats: {
    cases: number;
    refused: Map<number, number>;
    closes: Map<number | 'open', number>;
    joined: number;
    calls: number;
    reasons: Map<string, number>;
  };
}

function gcFunction(): () => void {
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (exposed) return exposed;
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

function heapAfterGc(gc: () => void): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

function count<K>(m: Map<K, number>, k: K): void {
  m.set(k, (m.get(k) ?? 0) + 1);
}

const text = (r: { content: Array<{ type: string; text?: string }> }): string =>
  r.content.map((c) => c.text ?? '').join('');

async function startTarget(): Promise<Target> {
  const logs = createLogWatch();
  const health = watchHealth(logs);
  const t = await startTestApp({
    createConversation: recordingConversation().factory,
    logs,
    config: {
      logging: { level: 'info' },
      mcpEndpoint: {
        requestTimeoutMs: 300,
        callTimeoutMs: CALL_TIMEOUT_MS,
        pingIntervalMs: 0,
        maxConnectionsPerAddress: 64,
      },
    },
  }).catch((err: unknown) => {
    health.stop();
    throw err;
  });
  try {
    for (const agent of ['fuzz', 'calm']) await t.app.store.agents.create(agent, {});
    const { token } = await t.app.store.mcpTokens.issue('fuzz');
    const calm = await t.app.store.mcpTokens.issue('calm');
    const base = `ws://127.0.0.1:${t.port}/mcp/`;
    const url = (tok: string, name?: string): string =>
      `${base}?token=${encodeURIComponent(tok)}${name !== undefined ? `&bridge=${encodeURIComponent(name)}` : ''}`;
    const same = await connectSdkBridge(url(token, SENTINEL_NAME), SENTINEL_NAME, [
      { name: 'sentinel_echo', description: 'Echoes', args: ['x'], run: (a) => `same:${a.x}` },
    ]);
    const other = await connectSdkBridge(url(calm.token), 'calm', [
      { name: 'calm_echo', description: 'Echoes', args: ['x'], run: (a) => `other:${a.x}` },
    ]);
    await waitFor(() => t.app.bridges.bridgesOf('fuzz').length === 1 && t.app.bridges.bridgesOf('calm').length === 1, {
      what: 'the well-behaved bridges',
    });
    const address = t.app.bridges.bridgesOf('fuzz')[0]?.address ?? '';
    return {
      t,
      logs,
      url,
      token,
      same,
      other,
      address,
      health,
      stats: { cases: 0, refused: new Map(), closes: new Map(), joined: 0, calls: 0, reasons: new Map() },
    };
  } catch (err) {
    health.stop();
    await t.close();
    throw err;
  }
}

function reply(ws: WebSocket, id: unknown, result: string | undefined, a: Answer): void {
  if (ws.readyState !== WebSocket.OPEN) return;
  const idText = JSON.stringify(id);
  if (a === 'silent') return;
  if (a === 'error') ws.send(`{"jsonrpc":"2.0","id":${idText},"error":{"code":-32603,"message":"fuzz error"}}`);
  else if (a === 'valid') ws.send(`{"jsonrpc":"2.0","id":${idText},"result":${result ?? '{}'}}`);
  else ws.send(`{"jsonrpc":"2.0","id":${idText},"result":${a.hostile}}`);
}

function send(ws: WebSocket, f: Frame): void {
  if (ws.readyState !== WebSocket.OPEN) return;
  switch (f.kind) {
    case 'text':
      ws.send(f.text);
      return;
    case 'binary':
      ws.send(Buffer.alloc(f.bytes, 7), { binary: true });
      return;
    case 'huge':
      ws.send(`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"${'h'.repeat(f.bytes)}"}}`);
      return;
    case 'listChangedFlood':
      for (let i = 0; i < f.count; i++) ws.send('{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}');
      return;
    case 'request':
      ws.send(JSON.stringify({ jsonrpc: '2.0', id: f.id, method: f.method, params: {} }));
  }
}

/**
 * The upgrade's answer: 101 (open socket) or the refusal's status. `answer` listens from before
 * the socket opens: the endpoint's initialize can come in the same packet as the 101.
 */
async function dial(
  target: Target,
  c: BridgeCase,
  answer: (ws: WebSocket, data: string) => void,
): Promise<{ ws: WebSocket; status: 101 } | { status: number }> {
  const token = c.token.kind === 'valid' ? target.token : c.token.token;
  // A header cannot carry every character; such a token goes in the query instead.
  const header = c.token.via === 'header' && /^[\x21-\x7e]*$/.test(token);
  const url = header
    ? target.url('', c.name).replace('?token=&', '?').replace('?token=', '')
    : target.url(token, c.name);
  const ws = new WebSocket(url, header ? { headers: { authorization: `Bearer ${token}` } } : {});
  ws.on('error', () => undefined);
  ws.on('message', (data, isBinary) => {
    if (!isBinary) answer(ws, String(data));
  });
  return new Promise((resolve) => {
    ws.once('open', () => resolve({ ws, status: 101 }));
    ws.once('unexpected-response', (_q, res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0 });
      ws.terminate();
    });
    ws.once('close', () => resolve({ status: 0 }));
  });
}

/** Answers one request of the endpoint as the case says. */
function answerRequest(ws: WebSocket, data: string, c: BridgeCase): void {
  let m: { id?: unknown; method?: string; params?: { cursor?: unknown } };
  try {
    m = JSON.parse(data) as typeof m;
  } catch {
    return;
  }
  if (m.id === undefined || typeof m.method !== 'string') return;
  if (m.method === 'initialize') {
    reply(
      ws,
      m.id,
      `{"protocolVersion":"2024-11-05","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":${JSON.stringify(c.name ?? 'fuzz')},"version":"1"}}`,
      c.initialize,
    );
  } else if (m.method === 'tools/list') {
    const p = c.listPlan;
    const page = typeof m.params?.cursor === 'string' ? Number(m.params.cursor.slice(1)) || 0 : 0;
    const next =
      p.cursor === 'none' || page + 1 >= p.pages
        ? ''
        : p.cursor === 'same'
          ? ',"nextCursor":"c1"'
          : `,"nextCursor":"c${page + 1}"`;
    reply(ws, m.id, `{"tools":${toolsText(p, page)}${next}}`, c.list);
  } else if (m.method === 'tools/call') {
    reply(ws, m.id, '{"content":[{"type":"text","text":"fine"}]}', c.call);
  } else if (m.method === 'ping') {
    reply(ws, m.id, '{}', 'valid');
  }
}

async function runCase(target: Target, c: BridgeCase): Promise<void> {
  const { t, stats } = target;
  stats.cases++;
  const opened = await dial(target, c, (ws, data) => answerRequest(ws, data, c));
  if (!('ws' in opened)) {
    count(stats.refused, opened.status);
    assert.ok(
      c.token.kind === 'bad' && (opened.status === 401 || opened.status === 429),
      `upgrade answered ${opened.status} for a ${c.token.kind} token`,
    );
    return;
  }
  assert.equal(c.token.kind, 'valid', "an upgrade with a token that is not the agent's was accepted");
  const ws = opened.ws;
  const closed = new Promise<number>((resolve) =>
    ws.on('close', (code, reason) => {
      count(
        stats.reasons,
        `${code} ${reason
          .toString()
          .replace(/[0-9]+/g, 'N')
          .replace(/\s+/g, ' ')
          .slice(0, 60)}`,
      );
      resolve(code);
    }),
  );
  for (const f of c.early) send(ws, f);
  const source = t.app.bridges.toolSource(() => 'fuzz');
  // Set-up ends (joined, or closed) within requestTimeoutMs per request (initialize, each page).
  const joined = (): boolean => t.app.bridges.bridgesOf('fuzz').length > 1;
  const outcome = await Promise.race([
    closed,
    waitFor(joined, { what: 'join', timeoutMs: 10_000 }).then(
      () => 'joined' as const,
      () => 'open' as const,
    ),
  ]);
  if (typeof outcome === 'number') {
    assert.ok(KNOWN_CLOSES.has(outcome), `closed with ${outcome} during set-up`);
    count(stats.closes, outcome);
  } else {
    if (outcome === 'joined') stats.joined++;
    for (const f of c.late) send(ws, f);
    const specs = await source.listTools();
    const bytes = specs.reduce((n, s) => n + toolSpecBytes(s), 0);
    const limits = t.app.bridges.limits;
    assert.ok(bytes <= limits.maxToolBytes, `${bytes} bytes of bridge tools offered`);
    assert.ok(specs.length <= limits.maxToolsPerAgent, `${specs.length} bridge tools offered`);
    for (const s of specs) assert.match(s.name, SAFE_TOOL_NAME);
    assert.ok(
      specs.some((s) => s.name === 'sentinel_echo'),
      'the well-behaved bridge keeps its tool name',
    );
    for (const s of specs.filter((x) => x.name !== 'sentinel_echo').slice(0, 3)) {
      const started = performance.now();
      const r = await source.callTool(s.name, {}, { signal: AbortSignal.timeout(10_000) });
      stats.calls++;
      assert.ok(Array.isArray(r.content) && typeof r.isError === 'boolean', 'a tool call returns a result');
      assert.ok(performance.now() - started < CALL_TIMEOUT_MS + 5000, 'a call ends within callTimeoutMs and a margin');
    }
    if (ws.readyState === WebSocket.OPEN) {
      count(stats.closes, 'open');
      ws.terminate();
    } else {
      // Closed by the endpoint for what it sent after joining (a huge frame, garbage, ...).
      const code = await closed;
      assert.ok(KNOWN_CLOSES.has(code), `closed with ${code} after joining`);
      count(stats.closes, code);
    }
  }
  // Nothing of the hostile bridge is held once it is gone.
  await waitFor(() => t.app.bridges.connections(target.address) === 2 && t.app.bridges.bridgesOf('fuzz').length === 1, {
    what: 'the hostile connection to be released',
    timeoutMs: 10_000,
  });
  await assertOthersServe(target);
}

async function assertOthersServe(target: Target): Promise<void> {
  const { t } = target;
  for (const b of [target.same, target.other])
    assert.equal(b.ws.readyState, WebSocket.OPEN, 'a well-behaved bridge was disconnected');
  const same = await t.app.bridges
    .toolSource(() => 'fuzz')
    .callTool('sentinel_echo', { x: 'hi' }, { signal: AbortSignal.timeout(5000) });
  assert.equal(text(same), 'same:hi');
  const other = await t.app.bridges
    .toolSource(() => 'calm')
    .callTool('calm_echo', { x: 'hi' }, { signal: AbortSignal.timeout(5000) });
  assert.equal(text(other), 'other:hi');
  target.health.assertHealthy('the well-behaved bridges checked');
}

function describe(target: Target, heap?: { before: number; after: number }): string {
  const { stats } = target;
  const fmt = <K>(m: Map<K, number>): string => [...m].map(([k, n]) => `${String(k)}×${n}`).join(' ') || 'none';
  const mb = (n: number): string => `${(n / 2 ** 20).toFixed(1)} MB`;
  return `${stats.cases} hostile bridges: refused ${fmt(stats.refused)}; closes ${fmt(stats.closes)}; ${stats.joined} joined; ${stats.calls} calls; reasons ${fmt(stats.reasons)}${heap ? `; heap after GC ${mb(heap.before)} → ${mb(heap.after)}` : ''}`;
}

export async function runMcpBridgeFuzz(opts: { seed: number; runs: number; timeLimitMs?: number }): Promise<string[]> {
  const gc = gcFunction();
  const target = await startTarget();
  try {
    // Warm up (code loaded, caches filled) before the heap is measured.
    await fc.assert(
      fc.asyncProperty(bridgeCase, (c) => runCase(target, c)),
      { seed: opts.seed + 1, numRuns: 5, endOnFailure: true },
    );
    const before = heapAfterGc(gc);
    await fc.assert(
      fc.asyncProperty(bridgeCase, (c) => runCase(target, c)),
      {
        seed: opts.seed,
        numRuns: opts.runs,
        endOnFailure: true,
        ...(opts.timeLimitMs ? { interruptAfterTimeLimit: opts.timeLimitMs } : {}),
      },
    );
    const after = heapAfterGc(gc);
    assert.ok(
      after - before < HEAP_GROWTH_LIMIT_BYTES,
      `the heap after GC grew by ${after - before} bytes over the run`,
    );
    // The store holds the well-behaved bridges only (written within a second of the last change).
    await waitFor(async () => (await target.t.app.store.mcpRelay.remote('fuzz', 'another-replica')).length === 1, {
      what: 'the store to hold the sentinel only',
      timeoutMs: 5000,
    });
    // A new bridge still connects and serves.
    const late = await connectSdkBridge(target.url(target.token, 'late'), 'late', [
      { name: 'late_echo', description: 'Echoes', run: () => 'late' },
    ]);
    try {
      await waitFor(
        async () =>
          (await target.t.app.bridges.toolSource(() => 'fuzz').listTools()).some((s) => s.name === 'late_echo'),
        { what: 'a new bridge after the run' },
      );
      assert.equal(
        text(
          await target.t.app.bridges
            .toolSource(() => 'fuzz')
            .callTool('late_echo', {}, { signal: AbortSignal.timeout(5000) }),
        ),
        'late',
      );
    } finally {
      await late.close();
    }
    return [describe(target, { before, after })];
  } finally {
    target.same.ws.terminate();
    target.other.ws.terminate();
    await target.t.close();
    target.health.stop();
  }
}
