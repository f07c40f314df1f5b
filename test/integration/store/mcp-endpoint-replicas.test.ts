/**
 * Two server replicas on one PostgreSQL, each wired as main.ts wires it (assembleServer) on its
 * own loopback port: a bridge connected to replica A serves the devices of its agent connected to
 * replica B. A publishes its bridges in the database; B offers their tools and queues each call
 * there; A runs it on the bridge and writes the result back. When the bridge leaves A, B stops
 * offering its tools.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DeviceSim } from '../../fixtures/device-sim.ts';
import { fakeToolCalls, startFakeOpenAi, type FakeOpenAi } from '../../fixtures/fake-openai.ts';
import { connectSdkBridge } from '../../fixtures/mcp-ws-bridge.ts';
import { startVoiceApp, type VoiceApp } from '../../helpers/voice-app.ts';
import { startPostgres, type TestPostgres } from '../../helpers/postgres.ts';
import { waitFor } from '../../helpers/wait.ts';

const ADMIN = 'admin-token-for-the-replica-endpoint';
const KITCHEN = 'a8:00:00:00:00:01';

describe('MCP endpoint across two replicas on one PostgreSQL', { timeout: 120_000 }, () => {
  let pg: TestPostgres;
  let llm: FakeOpenAi;
  let a: VoiceApp;
  let b: VoiceApp;
  before(async () => {
    pg = await startPostgres();
    const url = await pg.database();
    llm = await startFakeOpenAi();
    const config = {
      store: { url },
      admin: { token: ADMIN },
      agents: [{ name: 'kitchen', devices: [KITCHEN] }, { name: 'study' }],
      mcpEndpoint: { callTimeoutMs: 1500 },
    };
    [a, b] = await Promise.all([startVoiceApp(llm.url, config), startVoiceApp(llm.url, config)]);
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await llm?.close();
    await pg?.stop();
  });

  test('a bridge on replica A serves a device of its agent on replica B; its tools leave B when it leaves A; a revoke through B closes it on A', async () => {
    const r = await fetch(`${b.httpUrl}/api/admin/agents/kitchen/mcp-endpoint`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    const { token } = (await r.json()) as { token: string };
    assert.ok(token);
    // Issued through B, used on A: the token is in the database.
    const bridge = await connectSdkBridge(
      `${a.wsUrl.replace(/\/xiaozhi\/v1\/?$/, '')}/mcp/?token=${token}`,
      'calculator',
      [
        {
          name: 'calculator',
          description: 'Evaluates an arithmetic expression',
          args: ['python_expression'],
          run: (x) => `The result is ${x.python_expression === '6*7' ? 42 : '?'}`,
        },
      ],
    );
    try {
      const onB = b.app.bridges.toolSource(() => 'kitchen');
      await waitFor(async () => (await onB.listTools()).some((t) => t.name === 'calculator'), {
        what: 'the bridge tools on replica B',
        timeoutMs: 5000,
      });
      assert.deepEqual(
        await b.app.bridges.toolSource(() => 'study').listTools(),
        [],
        'another agent on B is not offered it',
      );
      // B's admin API shows the bridge connected to A, with A as its replica.
      const st = (await (
        await fetch(`${b.httpUrl}/api/admin/agents/kitchen/mcp-endpoint`, {
          headers: { authorization: `Bearer ${ADMIN}` },
        })
      ).json()) as { bridges: Array<{ name: string; replica: string; tools: string[] }> };
      assert.deepEqual(
        st.bridges.map((x) => [x.name, x.replica, x.tools]),
        [['calculator', a.app.bridges.owner, ['calculator']]],
      );

      const dev = new DeviceSim({ url: b.wsUrl, deviceId: KITCHEN });
      try {
        await dev.hello();
        llm.script(fakeToolCalls([{ name: 'calculator', arguments: { python_expression: '6*7' } }]));
        const n = llm.requests.length;
        dev.listen('detect', { text: 'What is six times seven?' });
        await dev.waitJson('tts', 'stop', 20_000);
        const tools = llm.requests
          .slice(n)
          .flatMap((q) => q.body.messages.filter((m) => m.role === 'tool').map((m) => String(m.content)));
        assert.ok(
          tools.some((t) => t.includes('The result is 42')),
          `the call ran on A and its result reached B: ${tools.join(' | ')}`,
        );
        const said = dev.json
          .filter((j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start')
          .map((j) => String(j.msg.text))
          .join(' ');
        assert.match(said, /42/);
      } finally {
        dev.close();
      }
    } finally {
      await bridge.close();
    }
    const onB = b.app.bridges.toolSource(() => 'kitchen');
    await waitFor(async () => (await onB.listTools()).length === 0, {
      what: 'the tools to leave replica B',
      timeoutMs: 5000,
    });

    // Revoked through B: the bridge connected to A is closed at A's next check.
    const again = await connectSdkBridge(
      `${a.wsUrl.replace(/\/xiaozhi\/v1\/?$/, '')}/mcp/?token=${token}`,
      'calculator',
      [{ name: 'calculator', description: 'x', run: () => '1' }],
    );
    assert.equal(
      (
        await fetch(`${b.httpUrl}/api/admin/agents/kitchen/mcp-endpoint`, {
          method: 'DELETE',
          headers: { authorization: `Bearer ${ADMIN}` },
        })
      ).status,
      204,
    );
    const closed = await Promise.race([
      again.closed,
      new Promise<{ code: number; reason: string }>((r) =>
        setTimeout(() => r({ code: 0, reason: 'still open' }), 30_000),
      ),
    ]);
    assert.deepEqual(closed, { code: 1008, reason: 'token revoked' });
  });

  test('a call forwarded to a bridge on another replica that never answers fails after mcpEndpoint.callTimeoutMs, with the reason', async () => {
    const { token } = await a.app.store.mcpTokens.issue('study');
    const silent = await connectSdkBridge(`${a.wsUrl.replace(/\/xiaozhi\/v1\/?$/, '')}/mcp/?token=${token}`, 'silent', [
      { name: 'never_answers', description: 'x', run: () => new Promise<string>(() => undefined) },
    ]);
    try {
      const onB = b.app.bridges.toolSource(() => 'study');
      await waitFor(async () => (await onB.listTools()).some((t) => t.name === 'never_answers'), {
        what: 'the bridge tools on replica B',
        timeoutMs: 5000,
      });
      // As the ReAct loop calls it: with the model's own (much longer) tool timeout.
      const r = await onB.callTool('never_answers', {}, { signal: AbortSignal.timeout(30_000), timeoutMs: 30_000 });
      assert.equal(r.isError, true);
      assert.match(
        r.content.map((c) => ('text' in c ? c.text : '')).join(''),
        /MCP bridge "silent" timed out after 1500 ms/,
      );
    } finally {
      await silent.close();
    }
  });
});
