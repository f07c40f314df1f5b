/**
 * The firmware pastes error text into its MCP replies unescaped ("Unknown tool: a"b"),
 * so the whole frame is not JSON. The session must still hand the reply's payload text to the
 * conversation, whose device MCP salvages the id and message; dropping the frame left the tool
 * call waiting for its 30 s timeout. Found while writing the protocol fuzz suite.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DeviceSim } from '../../fixtures/device-sim.ts';
import { recordingConversation } from '../../helpers/recording-conversation.ts';
import { startTestApp, type TestApp } from '../../helpers/test-app.ts';
import { waitFor } from '../../helpers/wait.ts';
import { salvageBrokenReply } from '../../../mcp/device-rpc.ts';

describe('device MCP reply that is not JSON', () => {
  let t: TestApp;
  const rec = recordingConversation();
  before(async () => {
    t = await startTestApp({ createConversation: rec.factory });
  });
  after(() => t.close());

  test('its payload text reaches the conversation, and the error in it can be salvaged', async () => {
    const dev = new DeviceSim({ url: t.wsUrl, deviceId: 'b0:00:00:00:00:01' });
    try {
      await dev.hello({ mcp: true });
      const payload = '{"jsonrpc":"2.0","id":3,"error":{"message":"Unknown tool: a"b"}}';
      // Byte for byte what the firmware builds by concatenation.
      dev.sendRaw(`{"session_id":"${dev.sessionId}","type":"mcp","payload":${payload}}`);
      const session = rec.sessions.at(-1);
      await waitFor(() => session?.calls.some((c) => c.name === 'mcp') === true, {
        what: 'the mcp call',
        timeoutMs: 5000,
      });
      const got = session?.calls.find((c) => c.name === 'mcp')?.arg;
      assert.equal(got, payload);
      assert.deepEqual(salvageBrokenReply(String(got)), { id: 3, message: 'Unknown tool: a"b' });
    } finally {
      dev.close();
    }
  });

  test('other text that is not JSON, or a broken mcp frame too long to be a firmware reply, is only rejected', async () => {
    const dev = new DeviceSim({ url: t.wsUrl, deviceId: 'b0:00:00:00:00:02' });
    try {
      await dev.hello({ mcp: true });
      const session = rec.sessions.at(-1);
      dev.sendRaw('{"type":"listen","state":"detect","text":"a"b"}');
      dev.sendRaw('{"type":"mcp","payload":"x"');
      // Too long to be a firmware error reply: the salvage regex is quadratic in it, so it is not tried.
      dev.sendRaw(`{"type":"mcp","payload":{"id":1,${'"error":{"message":"'.repeat(3000)}x}}`);
      dev.abort();
      await waitFor(() => session?.calls.some((c) => c.name === 'abort') === true, {
        what: 'the abort',
        timeoutMs: 5000,
      });
      assert.deepEqual(
        session?.calls.filter((c) => c.name === 'mcp' || c.name === 'detect'),
        [],
      );
    } finally {
      dev.close();
    }
  });
});
