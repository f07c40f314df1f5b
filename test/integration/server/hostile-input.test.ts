/**
 * Malformed and hostile device input over a real WebSocket: each case must be logged and answered
 * as the protocol allows (ignored, or the connection closed with a clear code), never crash the
 * process or disturb another session. After every case the same session (or, for closing cases, a
 * fresh connection) must still be served.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DeviceSim } from '../../fixtures/device-sim.ts';
import { recordingConversation } from '../../helpers/recording-conversation.ts';
import { startTestApp, type TestApp } from '../../helpers/test-app.ts';
import type { ProtocolVersion } from '../../../protocol/framing.ts';

interface Case {
  name: string;
  version?: ProtocolVersion;
  /** Send before the hello instead of after it. */
  beforeHello?: boolean;
  send: (dev: DeviceSim) => void;
  /** Expected close code; undefined means the session must survive. */
  closes?: number;
}

function deepJson(depth: number): string {
  return '{"type":"listen","state":"detect","text":"x","deep":' + '['.repeat(depth) + ']'.repeat(depth) + '}';
}

const v2Header = (declared: number, actual: number): Buffer => {
  const b = Buffer.alloc(16 + actual);
  b.writeUInt16BE(2, 0);
  b.writeUInt32BE(declared, 12);
  return b;
};
const v3Header = (declared: number, actual: number): Buffer => {
  const b = Buffer.alloc(4 + actual);
  b.writeUInt16BE(declared, 2);
  return b;
};

const cases: Case[] = [
  { name: 'broken JSON', send: (d) => d.sendRaw('{"type":"listen",') },
  { name: 'JSON null', send: (d) => d.sendRaw('null') },
  { name: 'JSON array', send: (d) => d.sendRaw('[1,2,3]') },
  { name: 'JSON number', send: (d) => d.sendRaw('42') },
  { name: 'JSON string', send: (d) => d.sendRaw('"hello"') },
  { name: 'empty text frame', send: (d) => d.sendRaw('') },
  { name: 'object without type', send: (d) => d.sendRaw('{}') },
  { name: 'numeric type', send: (d) => d.sendRaw('{"type":123}') },
  { name: 'unknown type', send: (d) => d.sendRaw('{"type":"format_c_drive"}') },
  { name: 'listen without state', send: (d) => d.sendRaw('{"type":"listen"}') },
  { name: 'listen with a bogus mode', send: (d) => d.sendRaw('{"type":"listen","state":"start","mode":"turbo"}') },
  { name: 'listen with a bogus state', send: (d) => d.sendRaw('{"type":"listen","state":"explode"}') },
  { name: 'detect with numeric text', send: (d) => d.sendRaw('{"type":"listen","state":"detect","text":123}') },
  {
    name: 'detect with a 50 KB text',
    send: (d) => d.sendRaw(JSON.stringify({ type: 'listen', state: 'detect', text: 'a'.repeat(50_000) })),
  },
  { name: 'session_id of the wrong type', send: (d) => d.sendRaw('{"type":"abort","session_id":{"x":1}}') },
  { name: 'mcp without payload', send: (d) => d.sendRaw('{"type":"mcp"}') },
  { name: 'mcp with a string payload', send: (d) => d.sendRaw('{"type":"mcp","payload":"x"}') },
  { name: 'mcp with an array payload', send: (d) => d.sendRaw('{"type":"mcp","payload":[1]}') },
  { name: 'abort with an object reason', send: (d) => d.sendRaw('{"type":"abort","reason":{"a":1}}') },
  { name: 'deeply nested JSON (30k levels)', send: (d) => d.sendRaw(deepJson(30_000)) },
  {
    name: 'prototype pollution attempt',
    send: (d) =>
      d.sendRaw(
        '{"type":"listen","state":"start","mode":"auto","__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}',
      ),
  },
  {
    name: 'second hello on the same socket',
    send: (d) => d.sendRaw(JSON.stringify({ type: 'hello', version: 1, transport: 'websocket' })),
  },
  {
    name: 'listen before hello is ignored',
    beforeHello: true,
    send: (d) => d.sendRaw('{"type":"listen","state":"start","mode":"auto"}'),
  },
  { name: 'binary before hello is dropped', beforeHello: true, send: (d) => d.sendRaw(Buffer.alloc(40, 1), true) },
  { name: 'empty binary frame (v1)', send: (d) => d.sendRaw(Buffer.alloc(0), true) },
  { name: 'v2 truncated header', version: 2, send: (d) => d.sendRaw(Buffer.alloc(10, 0xff), true) },
  { name: 'v2 size field larger than the frame', version: 2, send: (d) => d.sendRaw(v2Header(1000, 10), true) },
  { name: 'v2 size field smaller than the frame', version: 2, send: (d) => d.sendRaw(v2Header(0, 50), true) },
  { name: 'v2 size field 0xFFFFFFFF', version: 2, send: (d) => d.sendRaw(v2Header(0xffffffff, 8), true) },
  { name: 'v3 truncated header', version: 3, send: (d) => d.sendRaw(Buffer.from([0, 0]), true) },
  { name: 'v3 size field larger than the frame', version: 3, send: (d) => d.sendRaw(v3Header(500, 3), true) },
  { name: 'v3 size field smaller than the frame', version: 3, send: (d) => d.sendRaw(v3Header(1, 30), true) },
  {
    name: 'a flood of 2000 bad messages',
    send: (d) => {
      for (let i = 0; i < 2000; i++) d.sendRaw(`{bad ${i}`);
    },
  },
  {
    name: 'hello with an unsupported protocol version',
    beforeHello: true,
    send: (d) => d.sendRaw('{"type":"hello","version":9,"transport":"websocket"}'),
    closes: 4004,
  },
  {
    name: 'hello with a non-numeric version',
    beforeHello: true,
    send: (d) => d.sendRaw('{"type":"hello","version":"abc"}'),
    closes: 4004,
  },
  { name: 'oversize frame (70 KB binary)', send: (d) => d.sendRaw(Buffer.alloc(70_000), true), closes: 1009 },
  {
    name: 'invalid UTF-8 in a text frame',
    send: (d) => d.ws.send(Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), { binary: false }),
    closes: 1007,
  },
  { name: 'goodbye closes normally', send: (d) => d.sendRaw('{"type":"goodbye"}'), closes: 1000 },
];

describe('hostile device input', () => {
  let t: TestApp;
  const rec = recordingConversation();
  before(async () => {
    t = await startTestApp({ createConversation: rec.factory });
  });
  after(() => t.close());

  test(`there are at least 30 distinct cases (${cases.length})`, () => {
    assert.ok(cases.length >= 30);
  });

  // A bystander session that must be untouched by everything below.
  let bystander: DeviceSim;
  before(async () => {
    bystander = new DeviceSim({ url: t.wsUrl, deviceId: 'ee:ee:ee:ee:ee:ee' });
    await bystander.hello();
  });
  after(() => bystander.close());

  for (const c of cases) {
    test(c.name, async () => {
      const dev = new DeviceSim({ url: t.wsUrl, protocolVersion: c.version ?? 1 });
      try {
        await dev.opened;
        if (c.beforeHello) c.send(dev);
        if (c.closes !== undefined && c.beforeHello) {
          assert.equal(await dev.closed, c.closes);
          return;
        }
        await dev.hello();
        if (!c.beforeHello) c.send(dev);
        if (c.closes !== undefined) {
          assert.equal(await dev.closed, c.closes);
          return;
        }
        // Still served: an abort is answered with tts stop by the same session.
        const before = dev.json.length;
        dev.abort();
        await dev.waitJson('tts', 'stop', 5000, before);
        assert.equal(dev.closeCode, null);
      } finally {
        dev.close();
      }
    });
  }

  test('nothing was polluted, the bystander is still served, and a fresh device connects', async () => {
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
    const before = bystander.json.length;
    bystander.abort();
    await bystander.waitJson('tts', 'stop', 5000, before);
    const fresh = new DeviceSim({ url: t.wsUrl });
    const hello = await fresh.hello();
    assert.equal(hello.transport, 'websocket');
    fresh.close();
    assert.ok(t.logs.find('device message rejected').length > 20, 'rejections are logged');
    assert.ok(t.logs.find('bad audio frame dropped').length >= 6);
  });
});
