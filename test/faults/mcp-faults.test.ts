/**
 * Fault injection (issue 13): an MCP server killed (SIGKILL) or hung during a tools/call, over
 * stdio (the server's own child) and streamable HTTP (a separate process). Defined outcome: the
 * call becomes an error result the model explains (the device hears that answer and `tts stop`),
 * a killed server is reconnected and works again, a hung one stays connected; another device keeps
 * talking; afterwards nothing is left behind (handles, processes, connections, sessions).
 * The unit-level versions (manager only) are in test/integration/mcp/fixture-servers.test.ts.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DeviceSim } from '../fixtures/device-sim.ts';
import { fakeText, fakeToolCalls, onToolResults, startFakeOpenAi, type FakeOpenAi } from '../fixtures/fake-openai.ts';
import { fixtureEntry } from '../integration/mcp/mcp-test-helpers.ts';
import { closeAll } from '../helpers/close-all.ts';
import { startVoiceApp, type VoiceApp } from '../helpers/voice-app.ts';
import { pollUntil, within } from '../helpers/wait.ts';
import { assertNoLeaks, holdings, pidAlive } from './leak-check.ts';
import { startMcpHttpProcess, type McpHttpProcess } from './mcp-http-process.ts';

const TOOL_TIMEOUT_MS = 1500;

/** What the device was told it hears after message `from` (sentences joined: the cutter splits at colons). */
function spoken(dev: DeviceSim, from = 0): string {
  return dev.json.slice(from).filter((j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start').map((j) => String(j.msg.text)).join(' ');
}

describe('fault: MCP server killed or hung mid-call', { timeout: 120_000 }, () => {
  let llm: FakeOpenAi | undefined;
  let web: McpHttpProcess | undefined;
  let srv: VoiceApp | undefined;
  let n = 0;
  const server = (): VoiceApp => {
    assert.ok(srv, 'server started');
    return srv;
  };
  const fake = (): FakeOpenAi => {
    assert.ok(llm, 'fake LLM started');
    return llm;
  };
  const state = (name: string): { state: string; pid?: number } | undefined => server().deps.mcp.status().find((s) => s.name === name);
  const device = (): DeviceSim => new DeviceSim({ url: server().wsUrl, deviceId: `fa:00:00:00:01:${String(++n).padStart(2, '0')}` });

  /** One typed turn that calls `tool`; resolves with what the device heard and what the model was told. */
  async function toolTurn(dev: DeviceSim, tool: string, args: Record<string, unknown> = {}): Promise<{ said: string; toolMessage: string }> {
    const from = dev.json.length;
    const requests = fake().requests.length;
    fake().script(fakeToolCalls([{ name: tool, arguments: args }]));
    dev.listen('detect', { text: `please use ${tool}` });
    await dev.waitJson('tts', 'stop', 20_000, from);
    const observe = fake().requests[requests + 1];
    const toolMessage = String(observe?.body.messages.find((m) => m.role === 'tool')?.content ?? '');
    return { said: spoken(dev, from), toolMessage };
  }

  /** Starts a turn calling `tool` and resolves once the call has gone out to the MCP server. */
  async function startToolCall(dev: DeviceSim, tool: string): Promise<number> {
    const from = dev.json.length;
    const calls = server().logs.find('tool call').length;
    fake().script(fakeToolCalls([{ name: tool, arguments: {} }]));
    dev.listen('detect', { text: `please use ${tool}` });
    await pollUntil(`${tool} called`, () => server().logs.find('tool call').length > calls, 10_000);
    // The request is written right after the log line; give it a moment to reach the server.
    await new Promise((r) => setTimeout(r, 200));
    return from;
  }

  before(async () => {
    llm = await startFakeOpenAi({ keepAlive: false });
    // A failed call is explained in a few words: the default echo of the error text would take
    // seconds to play out in real time.
    llm.rule(onToolResults((r) => (r.toolResults.some((t) => t.content.startsWith('Error')) ? fakeText('That tool failed.') : fakeText(`The tool said: ${r.toolResults.map((t) => t.content).join('; ')}.`))));
    web = await startMcpHttpProcess();
    srv = await startVoiceApp(llm.url, {
      llm: { toolTimeoutMs: TOOL_TIMEOUT_MS },
      mcpServers: {
        fx: fixtureEntry(),
        web: { url: web.url, transport: 'streamable-http' },
      },
    });
    await pollUntil('both MCP servers ready', () => state('fx')?.state === 'ready' && state('web')?.state === 'ready', 20_000);
    // Warm-up: the first session and tool calls create what lives as long as the server
    // (media engine session slots, the pacer clock, HTTP parsers), so the baselines below are
    // taken with it present.
    const dev = device();
    try {
      await within(dev.hello(), 20_000, 'hello');
      assert.equal((await toolTurn(dev, 'fx__echo', { text: 'warm' })).said, 'The tool said: echo: warm.');
      assert.equal((await toolTurn(dev, 'web__echo', { text: 'warm' })).said, 'The tool said: echo: warm.');
    } finally {
      dev.close();
    }
    await within(dev.closed, 5000, 'warm-up device closed');
    await pollUntil('no session', () => server().app.registry.size === 0, 5000);
  }, { timeout: 60_000 });

  after(async () => {
    await closeAll(srv, llm, web ? { close: () => web?.kill() } : undefined);
  });

  test('stdio server SIGKILLed during tools/call: error result explained, reconnect, no leak', async () => {
    const base = await holdings(server().app);
    const oldPid = state('fx')?.pid;
    assert.ok(oldPid !== undefined && pidAlive(oldPid));
    const dev = device();
    const other = device();
    try {
      await within(Promise.all([dev.hello(), other.hello()]), 20_000, 'hello');
      const from = await startToolCall(dev, 'fx__hang');
      process.kill(oldPid, 'SIGKILL');
      await dev.waitJson('tts', 'stop', 15_000, from);
      const toolMessage = String(fake().requests.at(-1)?.body.messages.find((m) => m.role === 'tool')?.content);
      assert.match(toolMessage, /closed|disconnect|connection/i, 'the model is told the server went away');
      assert.match(spoken(dev, from), /^That tool failed\.$/);
      await pollUntil('fx reconnected', () => state('fx')?.state === 'ready' && state('fx')?.pid !== oldPid, 20_000);
      // Another device, and the same server's tools again after the reconnect.
      assert.equal((await toolTurn(other, 'fx__echo', { text: 'back' })).said, 'The tool said: echo: back.');
      assert.equal(dev.closeCode, null, 'the session survives its tool server dying');
    } finally {
      dev.close();
      other.close();
    }
    await within(Promise.all([dev.closed, other.closed]), 5000, 'devices closed');
    await assertNoLeaks(server().app, base, { deadPids: [oldPid] });
  });

  test('streamable HTTP server process SIGKILLed during tools/call: error result explained, reconnect after restart, no leak', async () => {
    const base = await holdings(server().app);
    assert.ok(web);
    const oldPid = web.pid;
    const dev = device();
    const other = device();
    try {
      await within(Promise.all([dev.hello(), other.hello()]), 20_000, 'hello');
      const from = await startToolCall(dev, 'web__hang');
      const killedAt = Date.now();
      await web.kill();
      await dev.waitJson('tts', 'stop', 15_000, from);
      // The SDK's streamable HTTP client only reports a POST's broken response stream through
      // onerror ("SSE stream disconnected") and leaves the request pending: the call ends by the
      // tool timeout, not at once as over stdio.
      const toolMessage = String(fake().requests.at(-1)?.body.messages.find((m) => m.role === 'tool')?.content);
      assert.match(toolMessage, /timed out|disconnected/i, 'the model is told the call failed');
      assert.ok(Date.now() - killedAt < TOOL_TIMEOUT_MS + 8000, 'bounded by the tool timeout');
      assert.match(spoken(dev, from), /^That tool failed\.$/);
      // The owner restarts it on the same address; the server reconnects by itself.
      web = await startMcpHttpProcess(web.port);
      await pollUntil('web reconnected', () => state('web')?.state === 'ready', 20_000);
      assert.equal((await toolTurn(other, 'web__echo', { text: 'back' })).said, 'The tool said: echo: back.');
    } finally {
      dev.close();
      other.close();
    }
    await within(Promise.all([dev.closed, other.closed]), 5000, 'devices closed');
    await assertNoLeaks(server().app, base, { deadPids: [oldPid] });
  });

  test('stdio server that never answers tools/call: the call times out, the model explains, the server stays connected', async () => {
    const base = await holdings(server().app);
    const pid = state('fx')?.pid;
    const dev = device();
    try {
      await within(dev.hello(), 20_000, 'hello');
      const t0 = Date.now();
      const turn = await toolTurn(dev, 'fx__hang');
      assert.match(turn.toolMessage, /^Error: Tool "(fx|web)__hang" timed out\.$/);
      assert.match(turn.said, /^That tool failed\.$/);
      assert.ok(Date.now() - t0 < 10_000, 'answered within the tool timeout and a turn');
      assert.equal(state('fx')?.state, 'ready');
      assert.equal(state('fx')?.pid, pid, 'a timeout does not restart the server');
      assert.equal((await toolTurn(dev, 'fx__echo', { text: 'still' })).said, 'The tool said: echo: still.');
    } finally {
      dev.close();
    }
    await within(dev.closed, 5000, 'device closed');
    await assertNoLeaks(server().app, base);
  });

  test('streamable HTTP server that never answers tools/call: the call times out, its request is dropped, no leak', async () => {
    const base = await holdings(server().app);
    const dev = device();
    try {
      await within(dev.hello(), 20_000, 'hello');
      const turn = await toolTurn(dev, 'web__hang');
      assert.match(turn.toolMessage, /^Error: Tool "(fx|web)__hang" timed out\.$/);
      assert.match(turn.said, /^That tool failed\.$/);
      assert.equal(state('web')?.state, 'ready');
      assert.equal((await toolTurn(dev, 'web__echo', { text: 'still' })).said, 'The tool said: echo: still.');
    } finally {
      dev.close();
    }
    await within(dev.closed, 5000, 'device closed');
    await assertNoLeaks(server().app, base);
  });
});
