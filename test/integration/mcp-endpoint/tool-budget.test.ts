/**
 * The agent's bridge tools within a budget (mcpEndpoint.maxToolBytes and maxToolsPerAgent): every
 * tool goes into every model request of the agent's devices, so eight bridges of large tools must
 * not make each request megabytes. Past the budget descriptions are cut, then tools dropped from
 * the last; one warning says so (not one per turn), and a dropped tool cannot be called.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from '../../helpers/test-app.ts';
import { recordingConversation } from '../../helpers/recording-conversation.ts';
import { waitFor } from '../../helpers/wait.ts';
import { toolSpecBytes } from '../../../mcp/tool-budget.ts';
import type { ToolSpec } from '../../../mcp/contract/tool-source.ts';
import { connectRawBridge, initializeResult, type RawBridge } from './raw-bridge.ts';

const MAX_BYTES = 8000;
const MAX_TOOLS = 12;

/** A tool of about 1.6 KB: a long description and a schema with described properties. */
function fatTool(name: string): Record<string, unknown> {
  const properties = Object.fromEntries(
    Array.from({ length: 4 }, (_, i) => [`p${i}`, { type: 'string', description: `parameter ${i} `.repeat(10) }]),
  );
  return {
    name,
    description: `What ${name} does, at length. `.repeat(30),
    inputSchema: { type: 'object', properties },
  };
}

describe("MCP endpoint: the agent's bridge tools within a budget", { timeout: 60_000 }, () => {
  let t: TestApp;
  const open: RawBridge[] = [];
  before(async () => {
    t = await startTestApp({
      createConversation: recordingConversation().factory,
      config: { mcpEndpoint: { pingIntervalMs: 0, maxToolBytes: MAX_BYTES, maxToolsPerAgent: MAX_TOOLS } },
    });
    await t.app.store.agents.create('kitchen', {});
  });
  after(async () => {
    for (const b of open) b.ws.terminate();
    await t.close();
  });

  test('eight bridges of large tools: the model sees at most the budget, one warning over many listings, a dropped tool is not callable', async () => {
    const { token } = await t.app.store.mcpTokens.issue('kitchen');
    for (let b = 0; b < 8; b++) {
      // Each bridge alone within the budget (about 6.2 KB), all eight far over it.
      const tools = Array.from({ length: 4 }, (_, i) => fatTool(`b${b}_t${i}`));
      open.push(
        await connectRawBridge(`ws://127.0.0.1:${t.port}/mcp/?token=${token}&bridge=fat${b}`, (m) =>
          m.method === 'initialize' ? initializeResult(`fat${b}`) : m.method === 'tools/list' ? { tools } : undefined,
        ),
      );
    }
    await waitFor(() => t.app.bridges.bridgesOf('kitchen').length === 8, { what: 'eight bridges' });
    const one = toolSpecBytes(fatTool('b0_t0') as unknown as ToolSpec);
    assert.ok(4 * one < MAX_BYTES && 8 * 4 * one > 5 * MAX_BYTES, `each tool is ${one} bytes`);
    for (let turn = 0; turn < 5; turn++) {
      const source = t.app.bridges.toolSource(() => 'kitchen');
      const specs = await source.listTools();
      const bytes = specs.reduce((n, s) => n + toolSpecBytes(s), 0);
      assert.ok(bytes <= MAX_BYTES, `${bytes} bytes offered`);
      assert.ok(specs.length > 0 && specs.length <= MAX_TOOLS, `${specs.length} tools offered`);
      assert.ok(
        specs.every((s) => (s.description ?? '').length <= 200),
        'descriptions are cut first',
      );
      assert.ok(
        specs.some((s) => s.name === 'b0_t0'),
        "the first bridge's first tool stays",
      );
      const dropped = await source.callTool('b7_t3', {}, { signal: new AbortController().signal });
      assert.equal(dropped.isError, true);
      assert.match(dropped.content.map((c) => ('text' in c ? c.text : '')).join(''), /Unknown tool/);
    }
    const warnings = t.logs.lines.filter((l) => l.level === 40 && /over the budget/.test(String(l.msg)));
    assert.equal(warnings.length, 1, `warnings: ${warnings.map((w) => String(w.msg)).join(' | ')}`);
    assert.equal(warnings[0]?.maxToolBytes, MAX_BYTES);
    assert.ok(Number(warnings[0]?.droppedCount) > 0);
  });

  test('one bridge alone far over the budget: it is held and published for the other replicas within the budget, one warning', async () => {
    await t.app.store.agents.create('office', {});
    const { token } = await t.app.store.mcpTokens.issue('office');
    // One page within maxMessageBytes (about 56 KB), seven times the budget.
    const tools = Array.from({ length: 36 }, (_, i) => fatTool(`big_${i}`));
    open.push(
      await connectRawBridge(`ws://127.0.0.1:${t.port}/mcp/?token=${token}&bridge=big`, (m) =>
        m.method === 'initialize' ? initializeResult('big') : m.method === 'tools/list' ? { tools } : undefined,
      ),
    );
    await waitFor(() => t.app.bridges.bridgesOf('office').length === 1, { what: 'the big bridge' });
    const held = t.app.bridges.bridgesOf('office')[0]?.tools ?? [];
    assert.ok(
      held.length > 0 && held.reduce((n, x) => n + toolSpecBytes(x), 0) <= MAX_BYTES,
      `${held.length} tools held`,
    );
    await waitFor(async () => (await t.app.store.mcpRelay.remote('office', 'another-replica')).length === 1, {
      what: 'the bridge published',
    });
    const [published] = await t.app.store.mcpRelay.remote('office', 'another-replica');
    assert.ok(
      Buffer.byteLength(JSON.stringify(published?.tools)) <= MAX_BYTES + 100 * held.length,
      'published within the budget',
    );
    assert.deepEqual(
      (published?.tools as ToolSpec[]).map((x) => x.name),
      held.map((x) => x.name),
    );
    await t.app.bridges.toolSource(() => 'office').listTools();
    const warnings = t.logs.lines.filter(
      (l) => l.level === 40 && l.bridge === 'big' && /over the budget/.test(String(l.msg)),
    );
    assert.equal(warnings.length, 1);
  });
});
