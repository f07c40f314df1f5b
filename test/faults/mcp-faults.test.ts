/**
 * Fault injection: an MCP server killed (SIGKILL) or hung during a tools/call, over
 * stdio (the server's own child), streamable HTTP and legacy SSE (separate processes). Defined
 * outcome: the call becomes an error result the model explains (the device hears that answer and
 * `tts stop`); a killed server fails the call at once, whatever its transport, and is reconnected
 * and works again; a hung one times out, its request is dropped (its HTTP response stream closed)
 * and it stays connected; another device keeps talking; afterwards nothing is left behind
 * (handles, processes, connections, sessions).
 * The unit-level versions (manager only) are in test/integration/mcp/.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DeviceSim } from '../fixtures/device-sim.ts';
import { fakeText, fakeToolCalls, onToolResults, startFakeOpenAi, type FakeOpenAi } from '../fixtures/fake-openai.ts';
import { fixtureEntry } from '../integration/mcp/mcp-test-helpers.ts';
import { closeAll } from '../helpers/close-all.ts';
import { startVoiceApp, type VoiceApp } from '../helpers/voice-app.ts';
import { waitFor, within } from '../helpers/wait.ts';
import { assertNoLeaks, holdings, loopbackConnectionsTo, pidAlive } from './leak-check.ts';
import { warmUp } from './rig.ts';
import { startMcpHttpProcess, type McpHttpProcess } from './mcp-http-process.ts';

/**
 * For the killed-server cases: long enough that a call ended by the tool timeout cannot pass for
 * a prompt failure (the SDK leaves a request whose HTTP response stream broke pending until then).
 */
const LONG_TOOL_TIMEOUT_MS = 60_000;
/** A killed server's call must have failed well within this (generous for a loaded CI machine). */
const PROMPT_FAILURE_MS = 12_000;
/** For the hung-server cases: the call ends by this timeout. */
const SHORT_TOOL_TIMEOUT_MS = 1500;

/** What the device was told it hears after message `from` (sentences joined: the cutter splits at colons). */
function spoken(dev: DeviceSim, from = 0): string {
  return dev.json
    .slice(from)
    .filter((j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start')
    .map((j) => String(j.msg.text))
    .join(' ');
}

/** The voice server, the fake LLM and the external MCP server processes one suite runs against. */
class Bench {
  llm: FakeOpenAi | undefined;
  srv: VoiceApp | undefined;
  /** External MCP server processes by configured name (replaced when a test restarts one). */
  readonly http = new Map<string, McpHttpProcess>();
  #n = 0;

  readonly tag: string;
  constructor(tag: string) {
    this.tag = tag;
  }

  server(): VoiceApp {
    assert.ok(this.srv, 'server started');
    return this.srv;
  }
  fake(): FakeOpenAi {
    assert.ok(this.llm, 'fake LLM started');
    return this.llm;
  }
  proc(name: string): McpHttpProcess {
    const p = this.http.get(name);
    assert.ok(p, `MCP process ${name} started`);
    return p;
  }
  state(name: string): { state: string; pid?: number } | undefined {
    return this.server()
      .deps.mcp.status()
      .find((s) => s.name === name);
  }
  device(): DeviceSim {
    return new DeviceSim({
      url: this.server().wsUrl,
      deviceId: `fa:00:00:00:${this.tag}:${String(++this.#n).padStart(2, '0')}`,
    });
  }

  /** Starts everything; `external` are HTTP MCP servers run as their own processes. */
  async start(
    toolTimeoutMs: number,
    external: Record<string, 'streamable-http' | 'sse'>,
    stdio: boolean,
  ): Promise<void> {
    this.llm = await startFakeOpenAi({ keepAlive: false });
    // A failed call is explained in a few words: the default echo of the error text would take
    // seconds to play out in real time.
    this.llm.rule(
      onToolResults((r) =>
        r.toolResults.some((t) => t.content.startsWith('Error'))
          ? fakeText('That tool failed.')
          : fakeText(`The tool said: ${r.toolResults.map((t) => t.content).join('; ')}.`),
      ),
    );
    const mcpServers: Record<string, unknown> = stdio ? { fx: fixtureEntry() } : {};
    for (const [name, transport] of Object.entries(external)) {
      const p = await startMcpHttpProcess({ transport });
      this.http.set(name, p);
      mcpServers[name] = { url: p.url, transport };
    }
    this.srv = await startVoiceApp(this.llm.url, { llm: { toolTimeoutMs }, mcpServers });
    const names = Object.keys(mcpServers);
    await waitFor(() => names.every((n) => this.state(n)?.state === 'ready'), {
      what: 'every MCP server ready',
      timeoutMs: 20_000,
    });
    // Warm-up with a tool call on every server: its connection's first call is made here too.
    await warmUp(
      this.srv,
      () => this.device(),
      async (dev) => {
        for (const n of names)
          assert.equal((await this.toolTurn(dev, `${n}__echo`, { text: 'warm' })).said, 'The tool said: echo: warm.');
      },
    );
  }

  async close(): Promise<void> {
    await closeAll(this.srv, this.llm, ...[...this.http.values()].map((p) => ({ close: () => p.kill() })));
  }

  /** One typed turn that calls `tool`; resolves with what the device heard and what the model was told. */
  async toolTurn(
    dev: DeviceSim,
    tool: string,
    args: Record<string, unknown> = {},
  ): Promise<{ said: string; toolMessage: string }> {
    const from = dev.json.length;
    const requests = this.fake().requests.length;
    this.fake().script(fakeToolCalls([{ name: tool, arguments: args }]));
    dev.listen('detect', { text: `please use ${tool}` });
    await dev.waitJson('tts', 'stop', 20_000, from);
    const observe = this.fake().requests[requests + 1];
    const toolMessage = String(observe?.body.messages.find((m) => m.role === 'tool')?.content ?? '');
    return { said: spoken(dev, from), toolMessage };
  }

  /** Starts a turn calling `tool` and resolves once the call has gone out to the MCP server. */
  async startToolCall(dev: DeviceSim, tool: string): Promise<number> {
    const from = dev.json.length;
    const calls = this.server().logs.find('tool call').length;
    this.fake().script(fakeToolCalls([{ name: tool, arguments: {} }]));
    dev.listen('detect', { text: `please use ${tool}` });
    await waitFor(() => this.server().logs.find('tool call').length > calls, {
      what: `${tool} called`,
      timeoutMs: 10_000,
    });
    // The request is written right after the log line; give it a moment to reach the server.
    await new Promise((r) => setTimeout(r, 200));
    return from;
  }

  /** What the model was told by the last tool result. */
  lastToolMessage(): string {
    return String(
      this.fake()
        .requests.at(-1)
        ?.body.messages.find((m) => m.role === 'tool')?.content,
    );
  }
}

describe('fault: MCP server killed mid-call', { timeout: 180_000 }, () => {
  const b = new Bench('01');
  before(() => b.start(LONG_TOOL_TIMEOUT_MS, { web: 'streamable-http', legacy: 'sse' }, true), { timeout: 60_000 });
  after(() => b.close());

  test('stdio server SIGKILLed during tools/call: error result explained, reconnect, no leak', async () => {
    const base = await holdings(b.server().app);
    const oldPid = b.state('fx')?.pid;
    assert.ok(oldPid !== undefined && pidAlive(oldPid));
    const dev = b.device();
    const other = b.device();
    try {
      await within(Promise.all([dev.hello(), other.hello()]), 20_000, 'hello');
      const from = await b.startToolCall(dev, 'fx__hang');
      const killedAt = Date.now();
      process.kill(oldPid, 'SIGKILL');
      await dev.waitJson('tts', 'stop', PROMPT_FAILURE_MS, from);
      assert.ok(Date.now() - killedAt < PROMPT_FAILURE_MS, 'failed at once, not by the tool timeout');
      assert.match(b.lastToolMessage(), /closed|disconnect|connection/i, 'the model is told the server went away');
      assert.match(spoken(dev, from), /^That tool failed\.$/);
      await waitFor(() => b.state('fx')?.state === 'ready' && b.state('fx')?.pid !== oldPid, {
        what: 'fx reconnected',
        timeoutMs: 20_000,
      });
      // Another device, and the same server's tools again after the reconnect.
      assert.equal((await b.toolTurn(other, 'fx__echo', { text: 'back' })).said, 'The tool said: echo: back.');
      assert.equal(dev.closeCode, null, 'the session survives its tool server dying');
    } finally {
      dev.close();
      other.close();
    }
    await within(Promise.all([dev.closed, other.closed]), 5000, 'devices closed');
    await assertNoLeaks(b.server().app, base, { deadPids: [oldPid] });
  });

  for (const [name, what] of [
    ['web', 'streamable HTTP'],
    ['legacy', 'legacy SSE'],
  ] as const) {
    test(`${what} server process SIGKILLed during tools/call: the call fails at once, explained, reconnect after restart, no leak`, async () => {
      const base = await holdings(b.server().app);
      const old = b.proc(name);
      const dev = b.device();
      const other = b.device();
      try {
        await within(Promise.all([dev.hello(), other.hello()]), 20_000, 'hello');
        const from = await b.startToolCall(dev, `${name}__hang`);
        const killedAt = Date.now();
        await old.kill();
        // Over HTTP the SDK only reports the broken stream through onerror and leaves the request
        // pending; the link checks the server is still there and fails the call when it is not.
        await dev.waitJson('tts', 'stop', PROMPT_FAILURE_MS, from);
        const tookMs = Date.now() - killedAt;
        assert.ok(
          tookMs < PROMPT_FAILURE_MS,
          `failed at once (${tookMs} ms), not by the ${LONG_TOOL_TIMEOUT_MS} ms tool timeout`,
        );
        const told = b.lastToolMessage();
        assert.match(
          told,
          new RegExp(
            `^Error: Tool hang failed: MCP server "${name}" disconnected during the call \\(server stopped answering`,
          ),
          'the model is told the server went away',
        );
        assert.doesNotMatch(told, /timed out/);
        assert.match(spoken(dev, from), /^That tool failed\.$/);
        // The owner restarts it on the same address; the server reconnects by itself.
        b.http.set(
          name,
          await startMcpHttpProcess({ port: old.port, transport: name === 'web' ? 'streamable-http' : 'sse' }),
        );
        await waitFor(() => b.state(name)?.state === 'ready', { what: `${name} reconnected`, timeoutMs: 20_000 });
        assert.equal((await b.toolTurn(other, `${name}__echo`, { text: 'back' })).said, 'The tool said: echo: back.');
      } finally {
        dev.close();
        other.close();
      }
      await within(Promise.all([dev.closed, other.closed]), 5000, 'devices closed');
      await assertNoLeaks(b.server().app, base, { deadPids: [old.pid] });
    });
  }
});

describe('fault: MCP server hung mid-call', { timeout: 120_000 }, () => {
  const b = new Bench('02');
  before(() => b.start(SHORT_TOOL_TIMEOUT_MS, { web: 'streamable-http' }, true), { timeout: 60_000 });
  after(() => b.close());

  test('stdio server that never answers tools/call: the call times out, the model explains, the server stays connected', async () => {
    const base = await holdings(b.server().app);
    const pid = b.state('fx')?.pid;
    const dev = b.device();
    try {
      await within(dev.hello(), 20_000, 'hello');
      const t0 = Date.now();
      const turn = await b.toolTurn(dev, 'fx__hang');
      assert.match(turn.toolMessage, /^Error: Tool "fx__hang" timed out\.$/);
      assert.match(turn.said, /^That tool failed\.$/);
      assert.ok(Date.now() - t0 < 10_000, 'answered within the tool timeout and a turn');
      assert.equal(b.state('fx')?.state, 'ready');
      assert.equal(b.state('fx')?.pid, pid, 'a timeout does not restart the server');
      assert.equal((await b.toolTurn(dev, 'fx__echo', { text: 'still' })).said, 'The tool said: echo: still.');
    } finally {
      dev.close();
    }
    await within(dev.closed, 5000, 'device closed');
    await assertNoLeaks(b.server().app, base);
  });

  test('streamable HTTP server that never answers tools/call: the call times out, its response stream is closed, no leak', async () => {
    const base = await holdings(b.server().app);
    const web = b.proc('web');
    const dev = b.device();
    try {
      await within(dev.hello(), 20_000, 'hello');
      const turn = await b.toolTurn(dev, 'web__hang');
      assert.match(turn.toolMessage, /^Error: Tool "web__hang" timed out\.$/);
      assert.match(turn.said, /^That tool failed\.$/);
      assert.equal(b.state('web')?.state, 'ready');
      // The hung call's POST keeps its response stream open for as long as the server does: the
      // client must close it when it gives up (every answer of this server closes its connection).
      await waitFor(() => loopbackConnectionsTo(web.port) === 0, {
        what: 'no connection left to the hung server',
        timeoutMs: 5000,
      });
      assert.equal((await b.toolTurn(dev, 'web__echo', { text: 'still' })).said, 'The tool said: echo: still.');
    } finally {
      dev.close();
    }
    await within(dev.closed, 5000, 'device closed');
    await assertNoLeaks(b.server().app, base);
  });
});
