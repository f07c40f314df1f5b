/**
 * The MCP endpoint on the real app (loopback port, real WebSocket clients): bridges built from the
 * MCP SDK's McpServer and hand-written ones that play the real bridges' quirks and misbehaviours.
 * Each case checks what the agent's tools become and what the bridge is told.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { WebSocket } from 'ws';
import { startTestApp, type TestApp } from '../../helpers/test-app.ts';
import { recordingConversation } from '../../helpers/recording-conversation.ts';
import { waitFor } from '../../helpers/wait.ts';
import { connectSdkBridge, type SdkBridge } from '../../fixtures/mcp-ws-bridge.ts';
import { connectRawBridge, initializeResult, tool, type RawBridge, type RpcMessage } from './raw-bridge.ts';

const ADMIN = 'admin-token-for-the-endpoint-tests';

describe('MCP endpoint', { timeout: 120_000 }, () => {
  let t: TestApp;
  const open: Array<{ close(): Promise<void> }> = [];
  let kitchenToken = '';
  let kitchenUrl = '';

  const admin = (method: string, path: string): Promise<Response> =>
    fetch(`${t.httpUrl}/api/admin${path}`, { method, headers: { authorization: `Bearer ${ADMIN}` } });
  const toolsOf = (agent: string) => t.app.bridges.toolSource(() => agent);
  const names = async (agent: string): Promise<string[]> =>
    (await toolsOf(agent).listTools()).map((s) => s.name).sort();
  const call = (agent: string, name: string, args: Record<string, unknown> = {}) =>
    toolsOf(agent).callTool(name, args, { signal: new AbortController().signal });
  const text = (r: { content: Array<{ type: string; text?: string }> }): string =>
    r.content.map((c) => c.text ?? '').join('');
  const endpoint = (token: string, extra = ''): string =>
    `${t.wsUrl.replace(/\/xiaozhi\/v1\/?$/, '')}/mcp/?token=${token}${extra}`;
  async function sdk(url: string, name: string, tools: Parameters<typeof connectSdkBridge>[2]): Promise<SdkBridge> {
    const b = await connectSdkBridge(url, name, tools);
    open.push(b);
    return b;
  }
  async function raw(url: string, answer: (m: RpcMessage, b: RawBridge) => unknown): Promise<RawBridge> {
    const b = await connectRawBridge(url, answer);
    open.push(b);
    return b;
  }
  /** Answers as a well-behaved bridge with `tools`, and `other` for anything else. */
  const plain =
    (tools: unknown[], other: (m: RpcMessage) => unknown = () => undefined) =>
    (m: RpcMessage) => {
      if (m.method === 'initialize') return initializeResult();
      if (m.method === 'tools/list') return { tools };
      if (m.method === 'ping') return {};
      return other(m);
    };
  async function issue(agent: string): Promise<{ url: string; token: string }> {
    const r = await admin('POST', `/agents/${agent}/mcp-endpoint`);
    assert.equal(r.status, 201);
    return (await r.json()) as { url: string; token: string };
  }

  before(async () => {
    t = await startTestApp({
      createConversation: recordingConversation().factory,
      config: {
        admin: { token: ADMIN },
        mcpEndpoint: {
          requestTimeoutMs: 1500,
          callTimeoutMs: 3000,
          maxToolsPerBridge: 64,
          maxBridgesPerAgent: 3,
          maxCallsInFlight: 1,
          maxMessageBytes: 60_000,
          pingIntervalMs: 300,
        },
      },
    });
    for (const name of ['kitchen', 'office', 'limits']) await t.app.store.agents.create(name, {});
    ({ token: kitchenToken, url: kitchenUrl } = await issue('kitchen'));
  });
  after(async () => {
    for (const b of open) await b.close().catch(() => undefined);
    await t.close();
  });

  test('a bridge built from the SDK McpServer serves its agent only; the admin API shows it; logs say so at info without the token', async () => {
    assert.ok(kitchenUrl.startsWith('ws://127.0.0.1:') && kitchenUrl.includes('/mcp/?token='), kitchenUrl);
    const b = await sdk(kitchenUrl, 'calculator', [
      {
        name: 'calculate',
        description: 'Adds two numbers',
        args: ['a', 'b'],
        run: (a) => String(Number(a.a) + Number(a.b)),
      },
    ]);
    await waitFor(async () => (await names('kitchen')).includes('calculate'), { what: 'the bridge tools' });
    assert.deepEqual(await names('office'), [], 'another agent is not offered the tool');
    const r = await call('kitchen', 'calculate', { a: '2', b: '40' });
    assert.equal(r.isError, false);
    assert.equal(text(r), '42');
    const st = (await (await admin('GET', '/agents/kitchen/mcp-endpoint')).json()) as {
      enabled: boolean;
      bridges: Array<{ name: string; tools: string[]; toolCount: number; protocolVersion: string }>;
      url: string;
    };
    assert.equal(st.enabled, true);
    assert.ok(!st.url.includes('token'), 'the token is never shown again');
    assert.deepEqual(
      st.bridges.map((x) => [x.name, x.tools, x.toolCount]),
      [['calculator', ['calculate'], 1]],
    );
    assert.match(st.bridges[0]?.protocolVersion ?? '', /^20\d\d-\d\d-\d\d$/);
    const connected = t.logs.find('mcp endpoint: bridge connected').at(-1);
    assert.equal(connected?.level, 30);
    assert.equal(connected?.tools, 1);
    assert.ok(!t.logs.text().includes(kitchenToken), 'the token never reaches the log');
    await b.close();
    await waitFor(async () => (await names('kitchen')).length === 0, { what: 'the tools to leave with the bridge' });
    await waitFor(
      () =>
        t.logs.find('mcp endpoint: bridge disconnected').some((l) => l.level === 30 && typeof l.reason === 'string'),
      { what: 'the disconnect log line' },
    );
  });

  test('Bearer works like ?token=; an unknown, empty or revoked token gets 401 before the upgrade', async () => {
    const base = endpoint('');
    const viaHeader = await connectSdkBridge(
      base.replace('?token=', ''),
      'header-bridge',
      [{ name: 'hdr', description: 'x', run: () => 'ok' }],
      { authorization: `Bearer ${kitchenToken}` },
    );
    open.push(viaHeader);
    await waitFor(async () => (await names('kitchen')).includes('hdr'), { what: 'the Bearer bridge' });
    for (const url of [endpoint('nope-nope-nope-nope-nope'), endpoint(''), base.replace('?token=', '')]) {
      await assert.rejects(connectSdkBridge(url, 'x', []), /HTTP 401/);
    }
    const { token } = await issue('office');
    const office = await sdk(endpoint(token), 'office-bridge', [{ name: 'lights', description: 'x', run: () => 'on' }]);
    await waitFor(async () => (await names('office')).includes('lights'), { what: 'the office bridge' });
    assert.equal((await admin('DELETE', '/agents/office/mcp-endpoint')).status, 204);
    const closed = await office.closed;
    assert.equal(closed.code, 1008);
    assert.match(closed.reason, /revoked/);
    await assert.rejects(connectSdkBridge(endpoint(token), 'x', []), /HTTP 401/);
    assert.deepEqual(await names('office'), []);
    assert.equal((await admin('DELETE', '/agents/office/mcp-endpoint')).status, 404);
    assert.equal((await admin('POST', '/agents/nobody/mcp-endpoint')).status, 404);
    await viaHeader.close();
  });

  test('two bridges on one token both serve (a clash is prefixed); one restarting comes back alone, the other untouched', async () => {
    const a = await sdk(kitchenUrl, 'alpha', [
      { name: 'weather', description: 'a', run: () => 'sunny (alpha)' },
      { name: 'alpha_only', description: 'a', run: () => 'A' },
    ]);
    const b = await sdk(kitchenUrl, 'beta', [
      { name: 'weather', description: 'b', run: () => 'rainy (beta)' },
      { name: 'beta_only', description: 'b', run: () => 'B' },
    ]);
    await waitFor(async () => (await names('kitchen')).length === 4, { what: 'both bridges' });
    assert.deepEqual(await names('kitchen'), ['alpha_only', 'beta__weather', 'beta_only', 'weather']);
    assert.equal(text(await call('kitchen', 'weather')), 'sunny (alpha)');
    assert.equal(text(await call('kitchen', 'beta__weather')), 'rainy (beta)');
    // beta restarts (its process ends, then a fresh McpServer connects, as xiaozhi-client does):
    // alpha stays. (same-name-bridges.test.ts: a restart whose old connection still looks open.)
    b.ws.terminate();
    await waitFor(() => t.app.bridges.bridgesOf('kitchen').length === 1, { what: 'the old beta to leave' });
    const b2 = await sdk(kitchenUrl, 'beta', [
      { name: 'weather', description: 'b', run: () => 'rainy again (beta 2)' },
      { name: 'beta_only', description: 'b', run: () => 'B2' },
    ]);
    await waitFor(
      () =>
        t.app.bridges.bridgesOf('kitchen').length === 2 &&
        t.app.bridges.bridgesOf('kitchen').some((x) => x.name === 'beta'),
      { what: 'beta back' },
    );
    assert.equal(a.ws.readyState, WebSocket.OPEN, 'the other bridge is untouched');
    await waitFor(async () => (await names('kitchen')).length === 4, { what: 'the reconnected bridge' });
    assert.equal(text(await call('kitchen', 'alpha_only')), 'A');
    assert.equal(text(await call('kitchen', 'beta_only')), 'B2');
    await b2.close();
    await waitFor(async () => (await names('kitchen')).join() === 'alpha_only,weather', { what: 'beta to leave' });
    await a.close();
  });

  test("the real bridges' quirks: id-less answer to initialized, cursor ignored, 2024-11-05 only, silent on other methods; pings both ways", async () => {
    let lists = 0;
    const b = await raw(kitchenUrl, (m) => {
      if (m.method === 'initialize') return initializeResult('quirky');
      if (m.method === 'notifications/initialized') return { jsonrpc: '2.0', result: {} };
      if (m.method === 'tools/list') {
        lists++;
        return { tools: [tool('quirk_echo')], nextCursor: 'more' };
      }
      if (m.method === 'ping') return {};
      if (m.method === 'tools/call')
        return { content: [{ type: 'text', text: `echo ${JSON.stringify(m.params?.arguments)}` }] };
      return undefined;
    });
    await waitFor(async () => (await names('kitchen')).includes('quirk_echo'), { what: 'the quirky bridge' });
    assert.equal(lists, 2, 'a cursor answered with the same page again stops the listing');
    assert.equal(text(await call('kitchen', 'quirk_echo', { x: 1 })), 'echo {"x":1}');
    const st = (await (await admin('GET', '/agents/kitchen/mcp-endpoint')).json()) as {
      bridges: Array<{ protocolVersion: string }>;
    };
    assert.equal(st.bridges[0]?.protocolVersion, '2024-11-05');
    // Our pings arrive and are answered; the bridge's own ping is answered too; so is a WebSocket ping.
    await waitFor(() => b.received.some((m) => m.method === 'ping'), { what: 'a ping from the server' });
    b.send({ jsonrpc: '2.0', id: 'bridge-ping', method: 'ping' });
    const pong = new Promise<void>((resolve) => b.ws.once('pong', () => resolve()));
    b.ws.ping();
    await pong;
    await waitFor(() => b.received.some((m) => m.id === 'bridge-ping' && m.result !== undefined), {
      what: 'our answer to the bridge ping',
    });
    // list_changed: listed again.
    b.send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    await waitFor(() => lists >= 4, { what: 'a second listing' });
    await b.close();
  });

  test('a bridge disconnecting mid-call fails the call with a clear result; its tools leave the list', async () => {
    const b = await raw(
      kitchenUrl,
      plain([tool('slow')], (m) => {
        if (m.method === 'tools/call') setTimeout(() => b.ws.terminate(), 100);
        return undefined;
      }),
    );
    await waitFor(async () => (await names('kitchen')).includes('slow'), { what: 'the slow tool' });
    const r = await call('kitchen', 'slow');
    assert.equal(r.isError, true);
    assert.match(text(r), /MCP bridge "raw-bridge" disconnected during the call/);
    await waitFor(async () => !(await names('kitchen')).includes('slow'), { what: 'the tool to leave' });
  });

  test('a flood of list_changed lists the tools again a few times, not once per notification', async () => {
    let lists = 0;
    const b = await raw(kitchenUrl, (m, self) => {
      if (m.method === 'initialize') return initializeResult();
      if (m.method === 'ping') return {};
      if (m.method === 'tools/list') {
        // Answered a little later, so the notifications arrive while a listing runs.
        lists++;
        const tools = [tool(lists > 1 ? 'flooded' : 'quiet')];
        setTimeout(() => self.send({ jsonrpc: '2.0', id: m.id, result: { tools } }), 50);
      }
      return undefined;
    });
    await waitFor(async () => (await names('kitchen')).includes('quiet'), { what: 'the first listing' });
    for (let i = 0; i < 200; i++) b.send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    await waitFor(async () => (await names('kitchen')).includes('flooded'), { what: 'the tools listed again' });
    await new Promise((r) => setTimeout(r, 500));
    assert.ok(lists >= 2 && lists <= 4, `listed ${lists} times for 200 notifications`);
    await b.close();
  });

  test('a steady stream of list_changed lists the tools about once a second, not once per round trip', async () => {
    let lists = 0;
    const b = await raw(kitchenUrl, (m) => {
      if (m.method === 'initialize') return initializeResult('chatty');
      if (m.method === 'ping') return {};
      if (m.method === 'tools/list') {
        lists++;
        return { tools: [tool(`chatty_${lists}`)] };
      }
      return undefined;
    });
    await waitFor(async () => (await names('kitchen')).includes('chatty_1'), { what: 'the first listing' });
    // Each notification after the last listing has answered (an instant bridge): 100 over 2 s.
    const listedBefore = lists;
    const started = performance.now();
    for (let i = 0; i < 100; i++) {
      b.send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
      await new Promise((r) => setTimeout(r, 20));
    }
    await new Promise((r) => setTimeout(r, 1200));
    // A loaded machine stretches the loop: the bound follows the time it really took (one listing a
    // second, plus the one that may start at once), never the 100 a listing per round trip would be.
    const seconds = (performance.now() - started) / 1000;
    const during = lists - listedBefore;
    assert.ok(
      during >= 1 && during <= Math.ceil(seconds) + 1,
      `listed ${during} times for 100 notifications over ${seconds.toFixed(1)} s`,
    );
    assert.ok((await names('kitchen')).includes(`chatty_${lists}`), 'the last listing is the one offered');
    await b.close();
  });

  test('bad input: malformed JSON and replies to unknown ids are ignored; a call over the in-flight bound is busy; a call that never answers times out', async () => {
    const b = await raw(kitchenUrl, plain([tool('hang')]));
    await waitFor(async () => (await names('kitchen')).includes('hang'), { what: 'the tool' });
    b.send('{not json');
    b.send({ jsonrpc: '2.0', id: 987654, result: {} });
    b.send([1, 2, 3]);
    const first = call('kitchen', 'hang');
    const second = await call('kitchen', 'hang');
    assert.match(text(second), /busy/);
    const r = await first;
    assert.match(text(r), /timed out after 3000 ms/);
    assert.equal(b.ws.readyState, WebSocket.OPEN, 'still connected');
    await b.close();
  });

  test('a protocol version the server does not know, and a bridge that stops answering pings: each closed with the reason', async () => {
    const future = await raw(kitchenUrl, (m) =>
      m.method === 'initialize' ? { ...initializeResult('future'), protocolVersion: '2099-01-01' } : undefined,
    );
    const f = await future.closed;
    assert.equal(f.code, 1008);
    assert.match(f.reason, /initialize failed/);
    const deaf = await raw(kitchenUrl, (m) =>
      m.method === 'initialize'
        ? initializeResult('deaf')
        : m.method === 'tools/list'
          ? { tools: [tool('deaf_tool')] }
          : undefined,
    );
    const d = await deaf.closed;
    assert.equal(d.code, 1001);
    assert.match(d.reason, /no answer to ping/);
    // The bridge sees the close frame before the server hears the closing handshake end.
    await waitFor(async () => !(await names('kitchen')).includes('deaf_tool'), {
      what: "the deaf bridge's tool to leave",
    });
  });

  test('limits: a deep or huge schema drops that tool only; too many tools, a list that never answers, a message too big, one bridge too many: each closed with a reason', async () => {
    const { url } = await issue('limits');
    // A schema 30,000 levels deep (JSON.stringify recurses: the text is built by hand) is 1 MB.
    const deepText = '{"type":"object","properties":{"x":'.repeat(30_000) + '{}' + '}}'.repeat(30_000);
    const deepBridge = await raw(url, (m, self) => {
      if (m.method === 'initialize') return initializeResult('deep');
      if (m.method === 'tools/list') {
        self.send(
          `{"jsonrpc":"2.0","id":${JSON.stringify(m.id)},"result":{"tools":[{"name":"deep","inputSchema":${deepText}},{"name":"fine","inputSchema":{"type":"object"}}]}}`,
        );
        return undefined;
      }
      return m.method === 'ping' ? {} : undefined;
    });
    // Over the WebSocket frame limit (server.maxMessageBytes): closed as too big by the socket itself.
    assert.equal((await deepBridge.closed).code, 1009);
    // Over the endpoint's own limit (60,000) but within the frame limit: closed with the sizes.
    const big = await raw(url, (m, self) => {
      if (m.method === 'initialize')
        self.send({
          jsonrpc: '2.0',
          id: m.id,
          result: { ...initializeResult('big'), instructions: 'x'.repeat(62_000) },
        });
      return undefined;
    });
    const bigClosed = await big.closed;
    assert.equal(bigClosed.code, 1009);
    assert.match(bigClosed.reason, /over the limit of 60000/);

    const nested = (n: number): unknown =>
      n === 0 ? { type: 'string' } : { type: 'object', properties: { x: nested(n - 1) } };
    const schemaBridge = await raw(url, plain([tool('too_deep', nested(100)), tool('fine')]));
    await waitFor(async () => (await names('limits')).includes('fine'), { what: 'the fine tool' });
    assert.ok(!(await names('limits')).includes('too_deep'));
    assert.ok(t.logs.find('mcp endpoint: tool left out (input schema too large)').length > 0);

    const many = await raw(url, (m) =>
      m.method === 'initialize'
        ? initializeResult('many')
        : m.method === 'tools/list'
          ? { tools: Array.from({ length: 1000 }, (_, i) => ({ name: `t${i}` })) }
          : undefined,
    );
    const manyClosed = await many.closed;
    assert.equal(manyClosed.code, 1008);
    assert.match(manyClosed.reason, /1000 tools is over the limit of 64/);

    const silent = await raw(url, (m) => (m.method === 'initialize' ? initializeResult('silent') : undefined));
    const silentClosed = await silent.closed;
    assert.equal(silentClosed.code, 1008);
    assert.match(silentClosed.reason, /tools\/list failed/);

    const two = await raw(`${url}&bridge=two`, plain([tool('two')]));
    const three = await raw(`${url}&bridge=three`, plain([tool('three')]));
    await waitFor(async () => (await names('limits')).length === 3, { what: 'three bridges' });
    const four = await raw(`${url}&bridge=four`, plain([tool('four')]));
    const fourClosed = await four.closed;
    assert.equal(fourClosed.code, 1008);
    assert.match(fourClosed.reason, /3 bridges connected/);
    assert.deepEqual(await names('limits'), ['fine', 'three', 'two'], 'the others are untouched');
    for (const b of [schemaBridge, two, three]) await b.close();
  });
});

describe('MCP endpoint: upgrades per address', { timeout: 60_000 }, () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({
      createConversation: recordingConversation().factory,
      config: {
        server: { upgradeRate: { perSecond: 0.01, burst: 5 } },
        mcpEndpoint: { maxConnectionsPerAddress: 2, pingIntervalMs: 0 },
      },
    });
    await t.app.store.agents.create('kitchen', {});
  });
  after(() => t.close());

  const status = (url: string): Promise<number> =>
    new Promise((resolve) => {
      const ws = new WebSocket(url);
      ws.on('unexpected-response', (_q, res) => resolve(res.statusCode ?? 0));
      ws.on('open', () => {
        ws.close();
        resolve(101);
      });
      ws.on('error', () => undefined);
    });

  test('failed upgrades spend the address budget (then 429); a valid token has its own; open connections per address are bounded', async () => {
    const base = `ws://127.0.0.1:${t.port}/mcp/?token=`;
    const { token } = await t.app.store.mcpTokens.issue('kitchen');
    const bad: number[] = [];
    for (let i = 0; i < 5; i++) bad.push(await status(`${base}bad-token-bad-token-${i}`));
    assert.deepEqual(bad, [401, 401, 401, 401, 401]);
    assert.equal(await status(`${base}bad-token-bad-token-6`), 429, 'the anonymous budget is spent');
    const first = await connectRawBridge(`${base}${token}&bridge=one`, (m) =>
      m.method === 'initialize' ? initializeResult('one') : m.method === 'tools/list' ? { tools: [] } : undefined,
    );
    const second = await connectRawBridge(`${base}${token}&bridge=two`, (m) =>
      m.method === 'initialize' ? initializeResult('two') : m.method === 'tools/list' ? { tools: [] } : undefined,
    );
    assert.equal(
      await status(`${base}${token}&bridge=three`),
      429,
      'two open connections from this address is the limit',
    );
    await first.close();
    await waitFor(() => t.app.bridges.bridgesOf('kitchen').length === 1, { what: 'the first bridge to leave' });
    assert.equal(
      await status(`${base}${token}&bridge=three`),
      101,
      'room for one more after a close; a valid token has its own budget',
    );
    await second.close();
  });
});
