// A device announcing far too many tools, a 30,000-deep schema and a huge one:
// the session keeps a bounded, flat tool list, says once what it dropped, and nothing overflows.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createDeviceMcp, DEVICE_TOOL_LIMITS } from '../../../mcp/device-mcp.ts';
import { recordingLogger } from './mcp-test-helpers.ts';

test('a device with 300 tools, a 30,000-deep schema and a 20 KB schema: at most 64 flat tools, one warning', async () => {
  const log = recordingLogger();
  const flat = Array.from({ length: 300 }, (_, i) => ({
    name: `self.tool_${i}`,
    description: 'x'.repeat(5000),
    inputSchema: { type: 'object', properties: {} },
  }));
  // The deep schema travels as raw JSON text, as a device would send it (building it as an object
  // and stringifying it here would overflow this test's own stack).
  const deep = `{"name":"self.deep","description":"d","inputSchema":${'{"a":'.repeat(30_000)}1${'}'.repeat(30_000)}}`;
  const huge = JSON.stringify({
    name: 'self.huge',
    description: 'h',
    inputSchema: {
      type: 'object',
      properties: Object.fromEntries(
        Array.from({ length: 800 }, (_, i) => [`p${i}`, { type: 'string', description: 'y'.repeat(20) }]),
      ),
    },
  });
  const toolsText = `[${deep},${huge},${flat.map((t) => JSON.stringify(t)).join(',')}]`;
  const dm = createDeviceMcp({
    log,
    // The count, depth and per-schema limits alone (the size budget over all tools has its own tests).
    maxSchemaBytes: 10_000_000,
    send: (payload) => {
      const id = payload.id as number | undefined;
      if (id === undefined) return;
      const result =
        payload.method === 'initialize'
          ? JSON.stringify({
              protocolVersion: '2024-11-05',
              capabilities: { tools: {} },
              serverInfo: { name: 'dev', version: '1' },
            })
          : `{"tools":${toolsText}}`;
      setImmediate(() => dm.handleMessage(`{"jsonrpc":"2.0","id":${id},"result":${result}}`));
    },
  });
  await dm.initialize();
  const tools = dm.tools();
  assert.equal(tools.length, DEVICE_TOOL_LIMITS.tools);
  assert.ok(!tools.some((t) => /deep|huge/.test(t.name)), 'the oversized schemas were dropped');
  assert.ok(tools.every((t) => (t.description ?? '').length <= DEVICE_TOOL_LIMITS.descriptionChars));
  // What every LLM request of the session would carry: bounded, and serialisable.
  assert.ok(JSON.stringify(tools).length < 100_000, `${JSON.stringify(tools).length} bytes of tools`);
  const warnings = log.records.filter((r) => r.msg === 'device mcp tools dropped: over the limits');
  assert.equal(warnings.length, 1);
  // 302 announced; 256 collected at most; of those 2 refused for their schema, 64 kept, 190 over the count.
  assert.deepEqual(warnings[0]?.obj.dropped, { overCount: 190, badName: 0, schemaTooDeep: 1, schemaTooLarge: 1 });
  dm.close();
});

test('a tool dropped for the size budget is not offered and not callable: no tools/call reaches the device', async () => {
  const tools = Array.from({ length: 10 }, (_, i) => ({
    name: `self.t${i}`,
    description: 'd',
    inputSchema: { type: 'object', properties: { p: { type: 'string', description: 'z'.repeat(900) } } },
  }));
  const calls: string[] = [];
  const dm = createDeviceMcp({
    log: recordingLogger(),
    maxSchemaBytes: 3000,
    send: (payload) => {
      const id = payload.id as number | undefined;
      if (id === undefined) return;
      if (payload.method === 'tools/call') calls.push(String((payload.params as { name?: unknown } | undefined)?.name));
      const result =
        payload.method === 'initialize'
          ? { protocolVersion: '2024-11-05', capabilities: { tools: {} }, serverInfo: { name: 'dev', version: '1' } }
          : payload.method === 'tools/list'
            ? { tools }
            : { content: [{ type: 'text', text: 'ok' }], isError: false };
      setImmediate(() => dm.handleMessage(JSON.stringify({ jsonrpc: '2.0', id, result })));
    },
  });
  await dm.initialize();
  const offered = dm.tools().map((t) => t.name);
  assert.ok(offered.length > 0 && offered.length < 10, `some offered, some dropped: ${offered.join(',')}`);
  const droppedName = offered[0]!.replace(/t\d+$/, 't9');
  assert.ok(!offered.includes(droppedName));
  const refused = await dm.toolSource().callTool(droppedName, {}, { signal: new AbortController().signal });
  assert.equal(refused.isError, true);
  const ok = await dm.toolSource().callTool(offered[0]!, {}, { signal: new AbortController().signal });
  assert.equal(ok.isError, false);
  assert.deepEqual(calls, ['self.t0'], 'only the offered tool reached the device');
  dm.close();
});
