// Device MCP against a fake xiaozhi device over a real WebSocket pair on 127.0.0.1. The device side
// follows the firmware: integer ids only, tools/list pages limited to 8000 bytes with the
// next tool's *name* as cursor, errors without `code`, one error message pasted unescaped. It also
// sends string-id replies, replies for unknown ids, non-object payloads and notifications.
import { describe, test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';
import { createDeviceMcp, type DeviceMcp } from '../../../mcp/device-mcp.ts';
import { salvageBrokenReply } from '../../../mcp/device-rpc.ts';
import type { ToolResult } from '../../../mcp/contract/tool-source.ts';
import { recordingLogger } from './mcp-test-helpers.ts';

const text = (r: ToolResult): string => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');

interface DeviceTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** The fake device's tool table: the stock ones plus enough board tools to need several pages. */
function deviceTools(): DeviceTool[] {
  const tools: DeviceTool[] = [
    {
      name: 'self.get_device_status',
      description: 'Device status as JSON.',
      inputSchema: { type: 'object', properties: {} },
    },
    {
      name: 'self.audio_speaker.set_volume',
      description: 'Set the volume of the audio speaker.',
      inputSchema: {
        type: 'object',
        properties: { volume: { type: 'integer', minimum: 0, maximum: 100 } },
        required: ['volume'],
      },
    },
    {
      name: 'self.camera.take_photo',
      description: 'Take a photo and explain it.',
      inputSchema: { type: 'object', properties: { question: { type: 'string' } }, required: ['question'] },
    },
    {
      name: 'self.broken.reply',
      description: 'Fails with an unescaped message.',
      inputSchema: { type: 'object', properties: {} },
    },
    { name: 'self.never.answers', description: 'Never replies.', inputSchema: { type: 'object', properties: {} } },
  ];
  for (let i = 0; i < 40; i++) {
    tools.push({
      name: `self.led_strip.effect_${i}`,
      description: `Board tool ${i}. ${'Lorem ipsum dolor sit amet. '.repeat(14)}`,
      inputSchema: { type: 'object', properties: {} },
    });
  }
  return tools;
}

/** Firmware-like pagination: as many tools as fit in 8000 bytes; cursor = name of the next tool. */
function toolsPage(tools: DeviceTool[], cursor: string): Record<string, unknown> {
  let start = cursor === '' ? 0 : tools.findIndex((t) => t.name === cursor);
  if (start < 0) start = tools.length;
  const page: DeviceTool[] = [];
  let i = start;
  for (; i < tools.length; i++) {
    const next = [...page, tools[i] as DeviceTool];
    if (JSON.stringify({ tools: next }).length > 8000) break;
    page.push(tools[i] as DeviceTool);
  }
  const result: Record<string, unknown> = { tools: page };
  if (i < tools.length) result.nextCursor = tools[i]?.name;
  return result;
}

/** The device side: a ws client answering the server's JSON-RPC like the firmware does. */
function startFakeDevice(url: string, received: Array<Record<string, unknown>>): Promise<WebSocket> {
  const tools = deviceTools();
  const ws = new WebSocket(url);
  const reply = (obj: unknown): void => ws.send(JSON.stringify({ session_id: 's', type: 'mcp', payload: obj }));
  ws.on('message', (data) => {
    const msg = JSON.parse(data.toString()) as { type: string; payload: Record<string, unknown> };
    const p = msg.payload;
    received.push(p);
    // Firmware validation: only integer ids get a reply; notifications are ignored.
    if (p.jsonrpc !== '2.0' || typeof p.method !== 'string' || p.method.startsWith('notifications')) return;
    if (typeof p.id !== 'number') return;
    const id = p.id;
    const params = (p.params ?? {}) as Record<string, unknown>;
    if (p.method === 'initialize') {
      // Noise first: a string-id reply and a reply for an id nobody asked for.
      reply({ jsonrpc: '2.0', id: String(id), result: { bogus: true } });
      reply({ jsonrpc: '2.0', id: 9999, result: {} });
      reply([1, 2, 3]);
      reply({ jsonrpc: '2.0', method: 'notifications/whatever' });
      reply({
        jsonrpc: '2.0',
        id,
        result: {
          protocolVersion: '2024-11-05',
          capabilities: { tools: {} },
          serverInfo: { name: 'fake-board', version: '2.4.2' },
        },
      });
      return;
    }
    if (p.method === 'tools/list') {
      reply({ jsonrpc: '2.0', id, result: toolsPage(tools, typeof params.cursor === 'string' ? params.cursor : '') });
      return;
    }
    if (p.method !== 'tools/call') {
      reply({ jsonrpc: '2.0', id, error: { message: `Method not implemented: ${p.method}` } });
      return;
    }
    const name = params.name;
    const args = (params.arguments ?? {}) as Record<string, unknown>;
    switch (name) {
      case 'self.get_device_status':
        reply({
          jsonrpc: '2.0',
          id,
          result: { content: [{ type: 'text', text: '{"audio_speaker":{"volume":70}}' }], isError: false },
        });
        return;
      case 'self.audio_speaker.set_volume': {
        const v = args.volume;
        if (typeof v !== 'number') reply({ jsonrpc: '2.0', id, error: { message: 'Missing valid argument: volume' } });
        else if (v > 100) reply({ jsonrpc: '2.0', id, error: { message: 'Value exceeds maximum allowed: 100' } });
        else {
          // A string-id duplicate first: it must not be taken as the answer.
          reply({ jsonrpc: '2.0', id: String(id), result: { content: [{ type: 'text', text: 'WRONG' }] } });
          reply({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: 'true' }], isError: false } });
        }
        return;
      }
      case 'self.camera.take_photo':
        // Slow like a real camera + vision round trip.
        setTimeout(
          () =>
            reply({
              jsonrpc: '2.0',
              id,
              result: {
                content: [{ type: 'text', text: `{"success":true,"response":"a cat (${String(args.question)})"}` }],
                isError: false,
              },
            }),
          300,
        );
        return;
      case 'self.broken.reply':
        // The firmware pastes the message unescaped: this frame is not valid JSON.
        ws.send(
          `{"session_id":"s","type":"mcp","payload":{"jsonrpc":"2.0","id":${id},"error":{"message":"Failed: "quoted" thing"}}}`,
        );
        return;
      case 'self.never.answers':
        return;
      default:
        ws.send(
          JSON.stringify({
            type: 'mcp',
            payload: { jsonrpc: '2.0', id, error: { message: `Unknown tool: ${String(name)}` } },
          }),
        );
    }
  });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

describe('device MCP over a real WebSocket', () => {
  const log = recordingLogger();
  const received: Array<Record<string, unknown>> = [];
  let wss: WebSocketServer;
  let device: WebSocket;
  let dm: DeviceMcp;

  before(async () => {
    wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise<void>((r) => wss.once('listening', () => r()));
    const connected = new Promise<WebSocket>((r) => wss.once('connection', (ws) => r(ws)));
    const { port } = wss.address() as AddressInfo;
    device = await startFakeDevice(`ws://127.0.0.1:${port}`, received);
    const serverSide = await connected;
    dm = createDeviceMcp({
      log,
      timeoutMs: 1500,
      // Room for all 45 tools (paging is what this suite tests; the size budget has its own tests).
      maxSchemaBytes: 1_000_000,
      vision: { url: 'http://127.0.0.1:8003/mcp/vision/explain', token: 'tok' },
      send: (payload) => serverSide.send(JSON.stringify({ session_id: 's', type: 'mcp', payload })),
    });
    // The server's ws route: hand each mcp payload over; for a frame that is not JSON, hand over the raw payload text.
    serverSide.on('message', (data) => {
      const raw = data.toString();
      try {
        const msg = JSON.parse(raw) as { type?: string; payload?: unknown };
        if (msg.type === 'mcp') dm.handleMessage(msg.payload);
      } catch {
        const at = raw.indexOf('"payload":');
        if (at >= 0) dm.handleMessage(raw.slice(at + '"payload":'.length, raw.lastIndexOf('}')));
      }
    });
    await dm.initialize();
  });
  after(async () => {
    dm.close();
    device.close();
    for (const c of wss.clients) c.terminate();
    await new Promise<void>((r) => wss.close(() => r()));
  });

  test('initialize carries vision; ids are integers; tools/list pages by tool-name cursor', () => {
    const init = received.find((p) => p.method === 'initialize');
    assert.ok(init);
    assert.equal(init.id, 1);
    assert.deepEqual((init.params as { capabilities: unknown }).capabilities, {
      vision: { url: 'http://127.0.0.1:8003/mcp/vision/explain', token: 'tok' },
    });
    const lists = received.filter((p) => p.method === 'tools/list');
    assert.ok(lists.length >= 3, `several pages (${lists.length})`);
    assert.deepEqual(lists[0]?.params, { cursor: '', withUserTools: false });
    assert.match(String((lists[1]?.params as { cursor: string }).cursor), /^self\.led_strip\.effect_\d+$/);
    for (const p of received.filter((x) => x.method !== undefined && !String(x.method).startsWith('notifications')))
      assert.equal(typeof p.id, 'number');
    assert.equal(dm.tools().length, 45);
  });

  test('dotted names are exposed sanitized and mapped back', async () => {
    const names = dm.tools().map((t) => t.name);
    assert.ok(names.includes('self_audio_speaker_set_volume'));
    for (const n of names) assert.match(n, /^[a-zA-Z0-9_-]{1,64}$/);
    assert.equal(dm.deviceToolName('self_audio_speaker_set_volume'), 'self.audio_speaker.set_volume');
    const listed = await dm.toolSource().listTools();
    assert.equal(listed.length, 45);
  });

  test('tools/call results flow back; a string-id duplicate is ignored', async () => {
    const r = await dm
      .toolSource()
      .callTool('self_audio_speaker_set_volume', { volume: 50 }, { signal: new AbortController().signal });
    assert.deepEqual(r, { content: [{ type: 'text', text: 'true' }], isError: false });
    const call = received.find((p) => p.method === 'tools/call');
    assert.deepEqual(call?.params, { name: 'self.audio_speaker.set_volume', arguments: { volume: 50 } });
    assert.ok(log.records.some((x) => x.msg === 'device mcp reply without an integer id ignored'));
    assert.ok(log.records.some((x) => x.msg === 'device mcp payload is not an object, ignored'));
    assert.ok(log.records.some((x) => x.msg === 'device mcp reply for an unknown or finished request ignored'));
  });

  test('slow tool (camera) answers within the timeout', async () => {
    const r = await dm
      .toolSource()
      .callTool('self_camera_take_photo', { question: 'what is this' }, { signal: new AbortController().signal });
    assert.equal(r.isError, false);
    assert.match(text(r), /a cat/);
  });

  test('error without code, unescaped error text and timeouts become error results', async () => {
    const ts = dm.toolSource();
    const s = new AbortController().signal;
    const over = await ts.callTool('self_audio_speaker_set_volume', { volume: 500 }, { signal: s });
    assert.equal(over.isError, true);
    assert.match(text(over), /Value exceeds maximum allowed: 100/);
    const broken = await ts.callTool('self_broken_reply', {}, { signal: s });
    assert.equal(broken.isError, true);
    assert.match(text(broken), /Failed: "quoted" thing/);
    const slow = await ts.callTool('self_never_answers', {}, { signal: s, timeoutMs: 200 });
    assert.equal(slow.isError, true);
    assert.match(text(slow), /did not answer/);
    const unknown = await ts.callTool('self_no_such_tool', {}, { signal: s });
    assert.equal(unknown.isError, true);
  });

  test('abort cancels a pending device call at once', async () => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    const r = await dm.toolSource().callTool('self_never_answers', {}, { signal: ac.signal, timeoutMs: 10_000 });
    assert.equal(r.isError, true);
    assert.match(text(r), /cancelled/);
  });

  test('garbage payloads are ignored without throwing', () => {
    for (const p of [null, 42, 'not json', '{"id":', { jsonrpc: '2.0' }, { id: 3.5, result: {} }, { id: 77 }])
      dm.handleMessage(p);
    assert.ok(log.records.filter((x) => x.level === 'warn').length > 0);
  });
});

describe('device MCP lifecycle', () => {
  test('close() turns pending calls into error results and later calls fail cleanly', async () => {
    const sent: Array<Record<string, unknown>> = [];
    const dm = createDeviceMcp({ log: recordingLogger(), send: (p) => sent.push(p) });
    const init = dm.initialize();
    // Answer initialize and a single tools/list page by hand.
    await new Promise((r) => setImmediate(r));
    dm.handleMessage({ jsonrpc: '2.0', id: sent[0]?.id, result: { protocolVersion: '2024-11-05' } });
    await new Promise((r) => setImmediate(r));
    const list = sent.find((p) => p.method === 'tools/list');
    dm.handleMessage(
      JSON.stringify({
        jsonrpc: '2.0',
        id: list?.id,
        result: { tools: [{ name: 'self.reboot', description: 'x', inputSchema: { type: 'object', properties: {} } }] },
      }),
    );
    await init;
    assert.deepEqual(
      dm.tools().map((t) => t.name),
      ['self_reboot'],
    );
    const pending = dm.toolSource().callTool('self_reboot', {}, { signal: new AbortController().signal });
    dm.close();
    const r = await pending;
    assert.equal(r.isError, true);
    assert.match(text(r), /disconnected/);
    const after = await dm.toolSource().callTool('self_reboot', {}, { signal: new AbortController().signal });
    assert.equal(after.isError, true);
  });

  test('initialize rejects when the device answers initialize with an error', async () => {
    const sent: Array<Record<string, unknown>> = [];
    const dm = createDeviceMcp({ log: recordingLogger(), send: (p) => sent.push(p) });
    const init = dm.initialize();
    await new Promise((r) => setImmediate(r));
    dm.handleMessage({ jsonrpc: '2.0', id: sent[0]?.id, error: { message: 'nope' } });
    await assert.rejects(init, /initialize failed: nope/);
    dm.close();
  });

  test('a device error message of 100 KB and a 50 KB cursor are logged cut to a short prefix', async () => {
    const log = recordingLogger();
    const long = 'e'.repeat(100_000);
    let pages = 0;
    // A device answering each request on the next turn: a repeated 50 KB cursor, then a long error.
    const dm: DeviceMcp = createDeviceMcp({
      log,
      send: (p) => {
        const id = p.id;
        if (id === undefined) return;
        const answer =
          p.method === 'initialize'
            ? { result: { protocolVersion: '2024-11-05' } }
            : p.method === 'tools/list'
              ? {
                  result: {
                    tools:
                      pages++ === 0
                        ? [{ name: 'self.x', description: 'x', inputSchema: { type: 'object', properties: {} } }]
                        : [],
                    nextCursor: 'c'.repeat(50_000),
                  },
                }
              : { error: { message: long } };
        setImmediate(() => dm.handleMessage({ jsonrpc: '2.0', id, ...answer }));
      },
    });
    await dm.initialize();
    const r = await dm.toolSource().callTool(dm.tools()[0]?.name ?? '', {}, { signal: new AbortController().signal });
    assert.equal(r.isError, true);
    const lines = log.records.filter(
      (l) => l.msg === 'device tool call failed' || l.msg === 'device mcp tools/list cursor repeated, stopping',
    );
    assert.equal(lines.length, 2, JSON.stringify(log.records.map((l) => l.msg)));
    for (const l of lines)
      assert.ok(JSON.stringify(l.obj).length < 400, `${l.msg}: ${JSON.stringify(l.obj).length} chars`);
    dm.close();
  });

  test('salvageBrokenReply recovers id and message from unescaped error JSON', () => {
    assert.deepEqual(salvageBrokenReply('{"jsonrpc":"2.0","id":7,"error":{"message":"Unknown tool: a"b"}}'), {
      id: 7,
      message: 'Unknown tool: a"b',
    });
    assert.equal(salvageBrokenReply('{"jsonrpc":"2.0","result":{}}'), undefined);
  });
});
