/**
 * The MCP endpoint across two server PROCESSES on one PostgreSQL, started as an operator starts
 * them (`node server/main.ts --config FILE`, each on its own port, the same `store.url`): a bridge
 * that dialled in to process A serves a device of its agent connected to process B, and a device
 * of another agent on B is not offered the tool. A publishes its bridges in the database; B offers
 * their tools and queues each call there; A runs it on the bridge and writes the result back.
 * (`mcp-endpoint-replicas.test.ts` checks the same wiring in one process, with its internals.)
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { DeviceSim } from '../../fixtures/device-sim.ts';
import { fakeToolCalls, startFakeOpenAi, type FakeOpenAi, type RecordedRequest } from '../../fixtures/fake-openai.ts';
import { connectSdkBridge } from '../../fixtures/mcp-ws-bridge.ts';
import { freePort, spawnServer, type SpawnedServer } from '../ops/helpers/spawned-server.ts';
import { startPostgres, type TestPostgres } from '../../helpers/postgres.ts';
import { waitFor } from '../../helpers/wait.ts';

const ADMIN = 'admin-token-for-two-processes-0001';
const KITCHEN = 'a8:00:00:00:00:11';
const STUDY = 'a8:00:00:00:00:12';

/** The tools a chat request offered the model. */
function toolNames(r: RecordedRequest | undefined): string[] {
  return (r?.body.tools ?? []).map((t) => t.function.name);
}

/** Env without the variables that would override the test's config file. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of [
    'HOST',
    'PORT',
    'OPENAI_BASE_URL',
    'OPENAI_API_KEY',
    'LLM_MODEL',
    'LOG_LEVEL',
    'PUBLIC_WS_URL',
    'XIAOZHI_CONFIG',
    'XIAOZHI_DATA_DIR',
    'DATABASE_URL',
    'ADMIN_TOKEN',
  ])
    delete env[k];
  return env;
}

describe('MCP endpoint across two server processes on one PostgreSQL', { timeout: 180_000 }, () => {
  let pg: TestPostgres;
  let llm: FakeOpenAi;
  let dir: string;
  const procs: SpawnedServer[] = [];

  async function start(url: string, name: string): Promise<SpawnedServer> {
    const port = await freePort();
    const file = join(dir, `${name}.yaml`);
    writeFileSync(
      file,
      stringify({
        server: { host: '127.0.0.1', port, dataDir: join(dir, name), maxSessionsPerIp: 0 },
        store: { url },
        admin: { token: ADMIN },
        llm: { baseURL: llm.url, model: 'fake-model', maxRetries: 0 },
        agents: [
          { name: 'kitchen', devices: [KITCHEN] },
          { name: 'study', devices: [STUDY] },
        ],
        logging: { level: 'info' },
      }),
    );
    const srv = await spawnServer({
      command: process.execPath,
      args: ['--import', 'tsx', 'server/main.ts', '--config', file],
      env: cleanEnv(),
      port,
      readyTimeoutMs: 90_000,
    });
    procs.push(srv);
    return srv;
  }

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mcp-two-processes-'));
    pg = await startPostgres();
    llm = await startFakeOpenAi();
  });
  after(async () => {
    for (const p of procs) await p.kill();
    await llm?.close();
    await pg?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('a bridge on process A serves a device of its agent on process B; another agent on B is not offered its tool', async () => {
    const url = await pg.database();
    // One after the other: the second finds the schema migrated (the lock is tested elsewhere).
    const a = await start(url, 'a');
    const b = await start(url, 'b');
    const admin = { authorization: `Bearer ${ADMIN}` };
    const issued = await fetch(`${b.httpUrl}/api/admin/agents/kitchen/mcp-endpoint`, {
      method: 'POST',
      headers: admin,
    });
    assert.equal(issued.status, 201);
    const { token } = (await issued.json()) as { token: string };
    // Issued through B, used on A.
    const bridge = await connectSdkBridge(`${a.httpUrl.replace('http', 'ws')}/mcp/?token=${token}`, 'calculator', [
      {
        name: 'calculator',
        description: 'Evaluates an arithmetic expression',
        args: ['python_expression'],
        run: (x) => `The result is ${x.python_expression === '6*7' ? 42 : '?'}`,
      },
    ]);
    const devices: DeviceSim[] = [];
    try {
      // B's admin API sees the bridge connected to A.
      await waitFor(
        async () => {
          const st = (await (
            await fetch(`${b.httpUrl}/api/admin/agents/kitchen/mcp-endpoint`, { headers: admin })
          ).json()) as { bridges?: Array<{ tools: string[] }> };
          return st.bridges?.some((x) => x.tools.includes('calculator')) ?? false;
        },
        { what: 'B to list the bridge connected to A', timeoutMs: 15_000 },
      );

      const kitchen = new DeviceSim({ url: b.wsUrl, deviceId: KITCHEN });
      devices.push(kitchen);
      await kitchen.hello();
      llm.script(fakeToolCalls([{ name: 'calculator', arguments: { python_expression: '6*7' } }]));
      let n = llm.requests.length;
      kitchen.listen('detect', { text: 'What is six times seven?' });
      await kitchen.waitJson('tts', 'stop', 30_000);
      const asked = llm.requests.slice(n);
      assert.ok(
        toolNames(asked[0]).includes('calculator'),
        `the kitchen device on B is offered the bridge's tool: ${toolNames(asked[0]).join(', ')}`,
      );
      const results = asked.flatMap((q) =>
        q.body.messages.filter((m) => m.role === 'tool').map((m) => String(m.content)),
      );
      assert.ok(
        results.some((t) => t.includes('The result is 42')),
        `the call ran on A and its result reached B: ${results.join(' | ')}`,
      );

      const study = new DeviceSim({ url: b.wsUrl, deviceId: STUDY });
      devices.push(study);
      await study.hello();
      n = llm.requests.length;
      study.listen('detect', { text: 'Anything new?' });
      await study.waitJson('tts', 'stop', 30_000);
      const studyAsked = llm.requests.slice(n);
      assert.ok(studyAsked.length > 0);
      assert.ok(
        !studyAsked.some((q) => toolNames(q).includes('calculator')),
        'a device of another agent is not offered the tool',
      );
    } finally {
      for (const d of devices) d.close();
      await bridge.close();
    }
  });
});
