/**
 * A bridge's tools are read as the device's are (`mcp/announced-tool.ts`): names made safe and kept
 * distinct (two names alike after sanitizing, or alike in their first 64 characters, are both
 * offered, each routed to its own), and a bare object schema offered as the model is sent it. A
 * real bridge over a real socket.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { silentLogger } from '../../../core/logger.ts';
import { Bridge } from '../../../features/mcp-endpoint/bridge.ts';
import { DEFAULT_MCP_ENDPOINT_LIMITS } from '../../../features/mcp-endpoint/limits.ts';
import { connectRawBridge, initializeResult, tool } from './raw-bridge.ts';

let wss: WebSocketServer;
before(async () => {
  wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise((r) => wss.once('listening', r));
});
after(async () => {
  await new Promise((r) => wss.close(r));
});

test('tools alike after sanitizing or in their first 64 characters are all offered and each call reaches its own tool', async () => {
  const long = 'x'.repeat(70);
  const tools = [
    tool('get.weather'),
    tool('get_weather'),
    tool(`${long}_a`),
    tool(`${long}_b`),
    tool('bare', { type: 'object' }),
  ];
  const called: string[] = [];
  const accepted = new Promise<WebSocket>((r) => wss.once('connection', r));
  const client = await connectRawBridge(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}/`, (m) => {
    if (m.method === 'initialize') return initializeResult('home');
    if (m.method === 'tools/list') return { tools };
    if (m.method === 'tools/call') {
      called.push(String(m.params?.name));
      return { content: [{ type: 'text', text: 'ok' }], isError: false };
    }
    return undefined;
  });
  const limits = { ...DEFAULT_MCP_ENDPOINT_LIMITS, pingIntervalMs: 0, requestTimeoutMs: 2000 };
  const bridge = new Bridge({
    ws: await accepted,
    agent: 'kitchen',
    id: 'b1',
    address: '127.0.0.1',
    limits,
    log: silentLogger,
    onToolsChanged: () => {},
  });
  try {
    await bridge.start();
    const names = bridge.tools.map((t) => t.name);
    assert.equal(names.length, 5, `offered: ${names.join(', ')}`);
    assert.equal(new Set(names).size, 5);
    assert.ok(
      names.every((n) => /^[a-zA-Z0-9_-]{1,64}$/.test(n)),
      'every name is one the model accepts',
    );
    assert.deepEqual(
      bridge.tools.find((t) => t.name === 'bare')?.inputSchema,
      { type: 'object', properties: {} },
      'as the model is sent it',
    );
    const signal = new AbortController().signal;
    for (const name of names) assert.equal((await bridge.callTool(name, {}, { signal })).isError, false);
    assert.deepEqual(
      called,
      tools.map((t) => t.name),
    );
  } finally {
    await client.close();
  }
});
