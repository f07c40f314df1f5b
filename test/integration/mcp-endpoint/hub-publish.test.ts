/**
 * What the hub writes to the database for the other replicas: a bridge's tools when they change,
 * and otherwise only its heartbeat (no tool lists): an idle hub with unchanged bridges rewrote every
 * tool list every 10 s (77 MB in 40 s with eight large bridges). A real bridge over a real socket.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { silentLogger } from '../../../core/logger.ts';
import { Bridge } from '../../../features/mcp-endpoint/bridge.ts';
import { BridgeHub } from '../../../features/mcp-endpoint/hub.ts';
import { DEFAULT_MCP_ENDPOINT_LIMITS } from '../../../features/mcp-endpoint/limits.ts';
import type { McpRelay } from '../../../store/mcp-endpoint-relay.ts';
import type { Store } from '../../../store/store.ts';
import { open, sqliteTarget } from '../../helpers/store-targets.ts';
import { waitFor } from '../../helpers/wait.ts';
import { connectRawBridge, initializeResult, tool } from './raw-bridge.ts';

const target = sqliteTarget();
let store: Store;
let wss: WebSocketServer;
before(async () => {
  store = await open(await target.fresh());
  wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise((r) => wss.once('listening', r));
});
after(async () => {
  await new Promise((r) => wss.close(r));
  await store.close();
  await target.close();
});

test('an idle hub writes no tool lists on its heartbeat; a change of tools is written once; the same list again is not', async () => {
  const writes: Array<{ method: string; bridges?: number }> = [];
  const real = store.mcpRelay;
  const relay: McpRelay = Object.assign(Object.create(real) as McpRelay, {
    publish: (owner: string, bridges: Parameters<McpRelay['publish']>[1]) => {
      writes.push({ method: 'publish', bridges: bridges.length });
      return real.publish(owner, bridges);
    },
    heartbeat: (owner: string) => {
      writes.push({ method: 'heartbeat' });
      return real.heartbeat(owner);
    },
  });
  const limits = { ...DEFAULT_MCP_ENDPOINT_LIMITS, pingIntervalMs: 0, requestTimeoutMs: 2000 };
  const hub = new BridgeHub(limits, silentLogger, { relay, heartbeatMs: 40, publishMinMs: 0 });
  const accepted = new Promise<WebSocket>((r) => wss.once('connection', r));
  let tools = [tool('lights')];
  const client = await connectRawBridge(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}/`, (m) =>
    m.method === 'initialize' ? initializeResult('home') : m.method === 'tools/list' ? { tools } : undefined,
  );
  try {
    const bridge = new Bridge({
      ws: await accepted,
      agent: 'kitchen',
      id: 'b1',
      address: '127.0.0.1',
      limits,
      log: silentLogger,
      onToolsChanged: () => hub.toolsChanged('kitchen'),
    });
    await bridge.start();
    assert.equal(await hub.join(bridge), true);
    await waitFor(() => writes.some((w) => w.method === 'publish' && w.bridges === 1), {
      what: 'the bridge to be published',
    });
    const other = () => real.remote('kitchen', 'another-replica');
    assert.deepEqual(
      (await other()).map((b) => b.tools.length),
      [1],
    );

    // Idle for several heartbeats: nothing but heartbeats.
    const from = writes.length;
    await new Promise((r) => setTimeout(r, 400));
    const idle = writes.slice(from);
    assert.ok(idle.length >= 2, `${idle.length} heartbeats in 400 ms`);
    assert.deepEqual(
      idle.filter((w) => w.method !== 'heartbeat'),
      [],
      'no tool lists rewritten while idle',
    );

    // list_changed with the same tools: nothing new to write.
    client.send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    await waitFor(() => client.received.filter((m) => m.method === 'tools/list').length === 2, {
      what: 'the second listing',
    });
    await new Promise((r) => setTimeout(r, 200));
    assert.deepEqual(
      writes.slice(from).filter((w) => w.method === 'publish'),
      [],
      'the same list is not written again',
    );

    // A different list: written once.
    tools = [tool('lights'), tool('heating')];
    client.send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    await waitFor(async () => (await other()).some((b) => b.tools.length === 2), {
      what: 'the new list for the other replicas',
    });
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(writes.slice(from).filter((w) => w.method === 'publish').length, 1);
  } finally {
    await client.close();
    await hub.stop();
  }
});
