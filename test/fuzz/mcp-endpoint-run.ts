/**
 * The MCP endpoint under fast-check: hostile bridges connect with a valid token and answer each of
 * the server's requests with a valid reply, a hostile value, a JSON-RPC error, a garbage frame or
 * nothing, and send unsolicited frames of their own. Checked after every case: the bridge was
 * closed with one of the endpoint's close codes or left open, every tool call it offered returned a
 * result (never threw), and a well-behaved bridge still connects and serves its tool.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { WebSocket } from 'ws';
import { startTestApp, type TestApp } from '../helpers/test-app.ts';
import { recordingConversation } from '../helpers/recording-conversation.ts';
import { waitFor } from '../helpers/wait.ts';
import { hostileValue } from './json-arbitraries.ts';

type Answer =
  | { kind: 'valid' }
  | { kind: 'hostile-result'; value: string }
  | { kind: 'error' }
  | { kind: 'garbage'; text: string }
  | { kind: 'silent' };

interface Plan {
  initialize: Answer;
  list: Answer;
  call: Answer;
  /** Frames sent unasked right after the socket opens. */
  extra: string[];
}

const answer: fc.Arbitrary<Answer> = fc.oneof(
  { weight: 5, arbitrary: fc.constant<Answer>({ kind: 'valid' }) },
  { weight: 2, arbitrary: hostileValue.map((value): Answer => ({ kind: 'hostile-result', value })) },
  { weight: 1, arbitrary: fc.constant<Answer>({ kind: 'error' }) },
  { weight: 1, arbitrary: hostileValue.map((text): Answer => ({ kind: 'garbage', text })) },
  { weight: 1, arbitrary: fc.constant<Answer>({ kind: 'silent' }) },
);

const plan: fc.Arbitrary<Plan> = fc.record({
  initialize: answer,
  list: answer,
  call: answer,
  extra: fc.array(hostileValue, { maxLength: 3 }),
});

/** Close codes the endpoint uses (and 1006: the socket dropped while the case ended). */
const KNOWN_CLOSES = new Set([1000, 1001, 1005, 1006, 1008, 1009]);

function validResult(method: string): unknown {
  if (method === 'initialize')
    return { protocolVersion: '2024-11-05', capabilities: { tools: {} }, serverInfo: { name: 'fuzz', version: '1' } };
  if (method === 'tools/list') return { tools: [{ name: 'fuzz_tool', inputSchema: { type: 'object' } }] };
  if (method === 'tools/call') return { content: [{ type: 'text', text: 'fine' }] };
  return {};
}

function reply(ws: WebSocket, id: unknown, method: string, a: Answer): void {
  const idText = JSON.stringify(id);
  switch (a.kind) {
    case 'valid':
      ws.send(JSON.stringify({ jsonrpc: '2.0', id, result: validResult(method) }));
      return;
    case 'hostile-result':
      ws.send(`{"jsonrpc":"2.0","id":${idText},"result":${a.value}}`);
      return;
    case 'error':
      ws.send(JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32603, message: 'fuzz error' } }));
      return;
    case 'garbage':
      ws.send(a.text);
      return;
    case 'silent':
      return;
  }
}

async function runCase(t: TestApp, url: string, p: Plan): Promise<void> {
  const ws = new WebSocket(url);
  const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
  ws.on('error', () => undefined);
  ws.on('message', (data) => {
    let m: { id?: unknown; method?: string };
    try {
      m = JSON.parse(String(data)) as { id?: unknown; method?: string };
    } catch {
      return;
    }
    if (m.id === undefined || typeof m.method !== 'string') return;
    const a =
      m.method === 'initialize'
        ? p.initialize
        : m.method === 'tools/list'
          ? p.list
          : m.method === 'tools/call'
            ? p.call
            : ({ kind: 'valid' } as Answer);
    reply(ws, m.id, m.method, a);
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('unexpected-response', (_q, res) => reject(new Error(`HTTP ${res.statusCode}`)));
  });
  for (const f of p.extra) if (ws.readyState === WebSocket.OPEN) ws.send(f);
  // Set-up ends (joined, or closed) within the endpoint's request timeout.
  const outcome = await Promise.race([closed, new Promise<'open'>((r) => setTimeout(() => r('open'), 700))]);
  if (outcome !== 'open') {
    assert.ok(KNOWN_CLOSES.has(outcome), `closed with ${outcome}`);
    return;
  }
  const source = t.app.bridges.toolSource(() => 'fuzz');
  for (const spec of await source.listTools()) {
    const r = await source.callTool(spec.name, {}, { signal: AbortSignal.timeout(2000) });
    assert.ok(Array.isArray(r.content) && typeof r.isError === 'boolean', 'a tool call returns a result');
  }
  ws.close();
  assert.ok(KNOWN_CLOSES.has(await closed));
}

/** A well-behaved bridge connects and serves its tool: the endpoint still works. */
async function healthy(t: TestApp, url: string): Promise<void> {
  const ws = new WebSocket(`${url}&bridge=healthy`);
  ws.on('message', (data) => {
    const m = JSON.parse(String(data)) as { id?: unknown; method?: string };
    if (m.id !== undefined && typeof m.method === 'string')
      ws.send(
        JSON.stringify({
          jsonrpc: '2.0',
          id: m.id,
          result:
            m.method === 'tools/list'
              ? { tools: [{ name: 'healthy_tool', inputSchema: { type: 'object' } }] }
              : validResult(m.method),
        }),
      );
  });
  const closed = new Promise<void>((r) => ws.on('close', () => r()));
  try {
    const source = t.app.bridges.toolSource(() => 'fuzz');
    await waitFor(async () => (await source.listTools()).some((s) => s.name === 'healthy_tool'), {
      what: 'a healthy bridge after the hostile ones',
    });
    const r = await source.callTool('healthy_tool', {}, { signal: AbortSignal.timeout(2000) });
    assert.equal(r.isError, false);
  } finally {
    ws.close();
    await closed;
  }
}

export async function runMcpEndpointFuzz(opts: { seed: number; runs: number }): Promise<string[]> {
  const t = await startTestApp({
    createConversation: recordingConversation().factory,
    config: {
      mcpEndpoint: { requestTimeoutMs: 300, callTimeoutMs: 300, pingIntervalMs: 0, maxConnectionsPerAddress: 1000 },
    },
  });
  try {
    await t.app.store.agents.create('fuzz', {});
    const { token } = await t.app.store.mcpTokens.issue('fuzz');
    const url = `ws://127.0.0.1:${t.port}/mcp/?token=${token}`;
    let cases = 0;
    await fc.assert(
      fc.asyncProperty(plan, async (p) => {
        cases++;
        await runCase(t, url, p);
      }),
      { seed: opts.seed, numRuns: opts.runs, endOnFailure: true },
    );
    await healthy(t, url);
    return [`${cases} hostile bridges; the endpoint still serves a healthy one`];
  } finally {
    await t.close();
  }
}
