/**
 * A bridge that stops reading while the server keeps answering it (a ping flood whose answers it
 * never reads) is let go: what the server queues for it stays bounded, and the socket is closed.
 * Real sockets on loopback: a ws server, the transport over the accepted socket, a ws client
 * whose TCP socket is paused.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo, Socket } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';
import { WebSocketPeerTransport } from '../../../mcp/websocket-peer-transport.ts';

test('a peer that does not read is closed once its queue passes maxBufferedBytes; the queue stays bounded', {
  timeout: 30_000,
}, async () => {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  const accepted = new Promise<WebSocket>((r) => wss.once('connection', (ws) => r(ws)));
  const client = new WebSocket(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}`);
  await new Promise<void>((r, j) => client.once('open', () => r()).once('error', j));
  const server = await accepted;
  try {
    (client as unknown as { _socket: Socket })._socket.pause();
    const transport = new WebSocketPeerTransport(server, { maxMessageBytes: 16 * 1024, maxBufferedBytes: 256 * 1024 });
    await transport.start();
    const closed = new Promise<void>((r) => server.once('close', () => r()));
    const payload = 'x'.repeat(10_000);
    let refused = false;
    let maxQueued = 0;
    // Not awaited: a send to a peer that does not read completes only when it reads.
    for (let i = 0; i < 20_000 && !refused; i++) {
      transport.send({ jsonrpc: '2.0', id: i, result: { payload } }).catch(() => (refused = true));
      maxQueued = Math.max(maxQueued, server.bufferedAmount);
      if (i % 10 === 0) await new Promise((r) => setImmediate(r));
    }
    assert.ok(refused, 'the transport refused to queue more for a peer that does not read');
    assert.ok(maxQueued < 1024 * 1024, `queued at most ${maxQueued} bytes`);
    await closed;
  } finally {
    client.terminate();
    await new Promise<void>((r) => wss.close(() => r()));
  }
});
