/**
 * A fleet runs a few firmware builds, each announcing the same tools on every connection: sessions
 * whose devices' tools read the same share one copy of them, immutable, instead of one each. Each
 * session still logs what its own listing lost to the bounds, and calls still go to its own device.
 * Bounded: a set over 64 KB (as JSON) is not shared, and at most 16 sets are kept.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createDeviceMcp, type DeviceMcp } from '../../../mcp/device-mcp.ts';
import { MAX_SHARED_SET_BYTES, MAX_SHARED_SETS } from '../../../mcp/device-tool-sets.ts';
import { recordingLogger } from '../../integration/mcp/mcp-test-helpers.ts';

interface Tool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

const STOCK: Tool[] = [
  {
    name: 'self.get_device_status',
    description: 'Device status as JSON.',
    inputSchema: { type: 'object', properties: {} },
  },
  {
    name: 'self.audio_speaker.set_volume',
    description: 'Set the volume of the audio speaker.',
    inputSchema: { type: 'object', properties: { volume: { type: 'integer', minimum: 0, maximum: 100 } } },
  },
];

/** One session's device MCP against a device (in memory) that lists `tools` and answers calls with its name. */
async function session(
  tools: Tool[],
  deviceName: string,
  opts: { maxSchemaBytes?: number } = {},
): Promise<{ dm: DeviceMcp; log: ReturnType<typeof recordingLogger> }> {
  const log = recordingLogger();
  // Each device's tools arrive as its own JSON text, as over the wire.
  const wire = JSON.stringify(tools);
  const dm: DeviceMcp = createDeviceMcp({
    log,
    ...opts,
    send: (p) => {
      const reply = (result: unknown): void =>
        queueMicrotask(() => dm.handleMessage({ jsonrpc: '2.0', id: p.id, result }));
      if (p.method === 'initialize') reply({ protocolVersion: '2024-11-05', capabilities: { tools: {} } });
      else if (p.method === 'tools/list') reply({ tools: JSON.parse(wire) as unknown });
      else if (p.method === 'tools/call') reply({ content: [{ type: 'text', text: deviceName }] });
    },
  });
  await dm.initialize();
  return { dm, log };
}

const callText = async (dm: DeviceMcp, name: string): Promise<string> => {
  const r = await dm.toolSource().callTool(name, {}, { signal: new AbortController().signal });
  return r.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
};

test('two devices listing the same tools: one read, shared; each call goes to its own device', async () => {
  const a = await session(STOCK, 'device a');
  const b = await session(STOCK, 'device b');
  assert.equal(a.dm.tools(), b.dm.tools());
  assert.deepEqual(
    a.dm.tools().map((t) => t.name),
    ['self_get_device_status', 'self_audio_speaker_set_volume'],
  );
  assert.equal(await callText(a.dm, 'self_get_device_status'), 'device a');
  assert.equal(await callText(b.dm, 'self_get_device_status'), 'device b');
});

test('the shared tools cannot be changed through one session', async () => {
  const { dm } = await session(STOCK, 'd');
  const spec = dm.tools()[1];
  assert.ok(spec);
  assert.ok(Object.isFrozen(dm.tools()));
  assert.ok(Object.isFrozen(spec));
  assert.ok(Object.isFrozen(spec.inputSchema.properties));
  assert.throws(() => {
    (spec as { description?: string }).description = 'changed';
  }, TypeError);
});

test('a device listing other tools, or the same under another budget, gets its own read', async () => {
  const a = await session(STOCK, 'a');
  const other = await session([...STOCK, { name: 'self.led.on', description: 'LED on.', inputSchema: {} }], 'c');
  assert.notEqual(other.dm.tools(), a.dm.tools());
  assert.equal(other.dm.tools().length, 3);
  const small = await session(STOCK, 'd', { maxSchemaBytes: 150 });
  assert.notEqual(small.dm.tools(), a.dm.tools());
  assert.equal(small.dm.tools().length, 1);
});

test('each session logs what its own listing lost to the budget, shared or not', async () => {
  const first = await session(STOCK, 'a', { maxSchemaBytes: 150 });
  const second = await session(STOCK, 'b', { maxSchemaBytes: 150 });
  assert.equal(first.dm.tools(), second.dm.tools());
  for (const s of [first, second])
    assert.equal(s.log.records.filter((r) => r.msg === 'device mcp tools over the schema budget').length, 1);
});

test(`bounded: a set over ${MAX_SHARED_SET_BYTES} bytes is not shared, and ${MAX_SHARED_SETS} sets are kept at most`, async () => {
  const big = Array.from({ length: 64 }, (_, i) => ({
    name: `self.t${i}`,
    description: 'x'.repeat(1000),
    inputSchema: { type: 'object', properties: {} },
  }));
  assert.ok(JSON.stringify(big).length > MAX_SHARED_SET_BYTES);
  // A budget that keeps them all (the default's 8 KB would cut the set down to a shared size).
  const b1 = await session(big, 'a', { maxSchemaBytes: 1_000_000 });
  const b2 = await session(big, 'b', { maxSchemaBytes: 1_000_000 });
  assert.notEqual(b1.dm.tools(), b2.dm.tools());
  assert.deepEqual(b1.dm.tools(), b2.dm.tools());

  const oldest = [{ name: 'self.oldest', description: 'The first set.', inputSchema: {} }];
  const first = await session(oldest, 'a');
  for (let i = 0; i < MAX_SHARED_SETS; i++)
    await session([{ name: `self.set_${i}`, description: `Set ${i}.`, inputSchema: {} }], 'x');
  const again = await session(oldest, 'b');
  assert.notEqual(again.dm.tools(), first.dm.tools(), 'the least recently used set was let go');
  assert.deepEqual(again.dm.tools(), first.dm.tools());
});
