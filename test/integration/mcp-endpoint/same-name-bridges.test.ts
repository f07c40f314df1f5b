/**
 * Bridges of one agent that give the same name (two copies of one package, or FastMCP servers left
 * at their default name): each live connection is a bridge of its own and serves, its tools under
 * distinct names; none is closed for the other. A bridge that reconnects after a crash, while the
 * server still holds its old connection (a dead peer looks alive until something is sent to it),
 * replaces that old connection once it fails to answer a ping.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { WebSocket } from 'ws';
import { startTestApp, type TestApp } from '../../helpers/test-app.ts';
import { recordingConversation } from '../../helpers/recording-conversation.ts';
import { waitFor } from '../../helpers/wait.ts';
import { connectSdkBridge, type SdkBridge } from '../../fixtures/mcp-ws-bridge.ts';

describe('MCP endpoint: bridges with one name', { timeout: 60_000 }, () => {
  let t: TestApp;
  let url = '';
  const open: SdkBridge[] = [];
  const toolsOf = () => t.app.bridges.toolSource(() => 'kitchen');
  const names = async (): Promise<string[]> => (await toolsOf().listTools()).map((s) => s.name).sort();
  const call = async (name: string): Promise<string> =>
    (await toolsOf().callTool(name, {}, { signal: new AbortController().signal })).content
      .map((c) => ('text' in c ? c.text : ''))
      .join('');
  async function bridge(name: string, tools: Array<[string, string]>): Promise<SdkBridge> {
    const b = await connectSdkBridge(
      url,
      name,
      tools.map(([tool, answer]) => ({ name: tool, description: `the ${tool} tool`, run: () => answer })),
    );
    open.push(b);
    return b;
  }

  before(async () => {
    // No periodic ping: only the check a namesake's arrival makes can find a dead connection.
    t = await startTestApp({
      createConversation: recordingConversation().factory,
      config: { mcpEndpoint: { pingIntervalMs: 0, requestTimeoutMs: 1000 } },
    });
    await t.app.store.agents.create('kitchen', {});
    const { token } = await t.app.store.mcpTokens.issue('kitchen');
    url = `ws://127.0.0.1:${t.port}/mcp/?token=${token}`;
  });
  after(async () => {
    for (const b of open) b.ws.terminate();
    await t.close();
  });

  test('three live bridges named "FastMCP" (two of them copies with the same tool) all serve; none is disconnected', async () => {
    const first = await bridge('FastMCP', [['add', 'first adds']]);
    await waitFor(() => t.app.bridges.bridgesOf('kitchen').length === 1, { what: 'the first bridge' });
    const second = await bridge('FastMCP', [['lights', 'second lights']]);
    await waitFor(() => t.app.bridges.bridgesOf('kitchen').length === 2, { what: 'the second bridge' });
    const copy = await bridge('FastMCP', [['add', 'the copy adds']]);
    await waitFor(() => t.app.bridges.bridgesOf('kitchen').length === 3, { what: 'the copy' });
    // Longer than the check of a namesake takes (requestTimeoutMs): nobody is closed afterwards.
    await new Promise((r) => setTimeout(r, 1500));
    for (const b of [first, second, copy]) assert.equal(b.ws.readyState, WebSocket.OPEN, 'still connected');
    assert.equal(t.app.bridges.bridgesOf('kitchen').length, 3);
    assert.deepEqual(await names(), ['FastMCP_3__add', 'add', 'lights']);
    assert.equal(await call('add'), 'first adds');
    assert.equal(await call('lights'), 'second lights');
    assert.equal(await call('FastMCP_3__add'), 'the copy adds');
    assert.equal(t.logs.find('mcp endpoint: bridge disconnected').length, 0);
    for (const b of [first, second, copy]) await b.close();
    await waitFor(() => t.app.bridges.bridgesOf('kitchen').length === 0, { what: 'the bridges to leave' });
  });

  test('a restarted bridge replaces its old connection, which no longer answers; a live namesake stays', async () => {
    const other = await bridge('beta', [['lights', 'the other beta']]);
    const old = await bridge('beta', [['weather', 'sunny (old)']]);
    await waitFor(() => t.app.bridges.bridgesOf('kitchen').length === 2, { what: 'both betas' });
    const oldId = t.app.bridges.bridgesOf('kitchen')[1]?.id;
    // The old bridge's process is gone but its connection looks alive: nothing it is sent is read.
    old.ws.pause();
    const restarted = await bridge('beta', [['weather', 'sunny (restarted)']]);
    await waitFor(
      () =>
        t.app.bridges.bridgesOf('kitchen').length === 2 &&
        !t.app.bridges.bridgesOf('kitchen').some((b) => b.id === oldId),
      { what: 'the old connection to be replaced' },
    );
    assert.equal(await call('weather'), 'sunny (restarted)');
    assert.equal(await call('lights'), 'the other beta');
    assert.equal(other.ws.readyState, WebSocket.OPEN, 'the live namesake is untouched');
    assert.equal(restarted.ws.readyState, WebSocket.OPEN);
    await waitFor(() => t.logs.find('mcp endpoint: bridge disconnected').some((l) => l.bridgeId === oldId), {
      what: 'the old connection to end',
    });
    assert.match(
      String(t.logs.find('mcp endpoint: bridge disconnected').find((l) => l.bridgeId === oldId)?.reason),
      /replaced/,
    );
  });
});
