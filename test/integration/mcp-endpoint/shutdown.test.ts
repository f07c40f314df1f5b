/**
 * The server stops: every bridge connected at /mcp/ hears close code 1001 (going away) with a
 * reason, whether it had joined its agent or was still being initialized, so a bridge knows to
 * reconnect later rather than treat the close as an error (1005: no code).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp } from '../../helpers/test-app.ts';
import { recordingConversation } from '../../helpers/recording-conversation.ts';
import { waitFor } from '../../helpers/wait.ts';
import { connectRawBridge, initializeResult, tool } from './raw-bridge.ts';

test('at shutdown a joined bridge and one still initializing are closed with 1001', { timeout: 60_000 }, async () => {
  const t = await startTestApp({
    createConversation: recordingConversation().factory,
    config: { mcpEndpoint: { pingIntervalMs: 0 } },
  });
  let closed = false;
  try {
    await t.app.store.agents.create('kitchen', {});
    const { token } = await t.app.store.mcpTokens.issue('kitchen');
    const url = `ws://127.0.0.1:${t.port}/mcp/?token=${token}`;
    const joined = await connectRawBridge(`${url}&bridge=joined`, (m) =>
      m.method === 'initialize'
        ? initializeResult('joined')
        : m.method === 'tools/list'
          ? { tools: [tool('lights')] }
          : undefined,
    );
    // Never answers initialize: still being set up when the server stops.
    const starting = await connectRawBridge(`${url}&bridge=starting`, () => undefined);
    await waitFor(() => t.app.bridges.bridgesOf('kitchen').length === 1, { what: 'the first bridge to join' });
    await waitFor(() => starting.received.some((m) => m.method === 'initialize'), {
      what: 'the second bridge to be asked to initialize',
    });
    await t.close();
    closed = true;
    for (const b of [joined, starting]) {
      const c = await b.closed;
      assert.equal(c.code, 1001, `closed with ${c.code} (${c.reason})`);
      assert.match(c.reason, /shutting down/);
    }
  } finally {
    if (!closed) await t.close();
  }
});
