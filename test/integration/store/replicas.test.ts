/**
 * Two server replicas on one PostgreSQL, each wired as main.ts wires it (assembleServer) on its
 * own loopback port: they behave as one server. A device bound through one is accepted by the
 * other; a revoke on one ends the device's session on the other within 2 s; an agent change on
 * one reaches the other's cache within 2 s.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DeviceSim } from '../../fixtures/device-sim.ts';
import { startFakeOpenAi, type FakeOpenAi } from '../../fixtures/fake-openai.ts';
import { startVoiceApp, type VoiceApp } from '../../helpers/voice-app.ts';
import { startPostgres, type TestPostgres } from '../../helpers/postgres.ts';
import { waitFor } from '../../helpers/wait.ts';

const WITHIN_MS = 2000;
const DEVICE = { 'Device-Id': 'e4:00:00:00:00:31', 'Client-Id': '0b9a3c1e-7d55-4e0f-9a51-2c4f1e9b7d31' };

describe('two replicas on one PostgreSQL', () => {
  let pg: TestPostgres;
  let llm: FakeOpenAi;
  let a: VoiceApp;
  let b: VoiceApp;
  before(async () => {
    pg = await startPostgres();
    const url = await pg.database();
    llm = await startFakeOpenAi();
    const config = { store: { url }, server: { auth: { mode: 'activation' } } };
    // Started together: the migration lock lets one of them migrate.
    [a, b] = await Promise.all([startVoiceApp(llm.url, config), startVoiceApp(llm.url, config)]);
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await llm?.close();
    await pg?.stop();
  });

  const ota = async (srv: VoiceApp): Promise<{ websocket: { token?: string }; activation?: { code: string } }> => {
    const res = await fetch(`${srv.httpUrl}/xiaozhi/ota/`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...DEVICE },
      body: '{}',
    });
    assert.equal(res.status, 200);
    return (await res.json()) as { websocket: { token?: string }; activation?: { code: string } };
  };

  test('bound through one, accepted by the other; revoked on one, its session on the other ends within 2 s', async () => {
    const first = await ota(a);
    const code = first.activation?.code ?? '';
    assert.match(code, /^\d{6}$/);
    assert.equal((await ota(b)).activation?.code, code, 'the other replica knows the pending code');
    assert.equal((await a.app.devices?.bind(code))?.ok, true);
    await waitFor(() => b.app.devices?.isBound(DEVICE['Device-Id'], DEVICE['Client-Id']), {
      what: 'the binding on the other replica',
      timeoutMs: WITHIN_MS,
    });
    const token = (await ota(b)).websocket.token ?? '';
    assert.equal(token, first.websocket.token, 'one secret: the same token from either replica');

    const dev = new DeviceSim({ url: b.wsUrl, deviceId: DEVICE['Device-Id'], clientId: DEVICE['Client-Id'], token });
    try {
      await dev.hello();
      assert.equal(dev.closeCode, null);
      const t0 = performance.now();
      assert.equal((await a.app.devices?.revoke(DEVICE['Device-Id']))?.length, 1);
      const closed = await Promise.race([
        dev.closed,
        new Promise<string>((r) => setTimeout(() => r('still open'), WITHIN_MS)),
      ]);
      assert.equal(closed, 4005, "the other replica ended the revoked device's session");
      process.stderr.write(
        `# revoke reached the other replica's session in ${(performance.now() - t0).toFixed(0)} ms\n`,
      );
    } finally {
      dev.close();
    }
    const again = new DeviceSim({ url: b.wsUrl, deviceId: DEVICE['Device-Id'], clientId: DEVICE['Client-Id'], token });
    await assert.rejects(again.opened, /HTTP 401/);
    again.close();
  });

  test("an agent created and changed on one reaches the other's cache within 2 s; device records are shared", async () => {
    assert.ok(await a.app.store.agents.create('teacher', { systemPrompt: 'Teach.' }));
    await waitFor(() => b.app.store.cache.agent('teacher'), {
      what: 'the agent on the other replica',
      timeoutMs: WITHIN_MS,
    });
    await b.app.store.agents.update('teacher', { systemPrompt: 'Teach kindly.' });
    await waitFor(() => a.app.store.cache.agent('teacher')?.settings.systemPrompt === 'Teach kindly.', {
      what: 'the update on the first replica',
      timeoutMs: WITHIN_MS,
    });
    // The device asked both replicas' OTA: one record, with the agent set through either.
    await a.app.store.devices.update(DEVICE['Device-Id'], { agent: 'teacher' });
    await waitFor(() => b.app.store.cache.agentNameOf(DEVICE['Device-Id']) === 'teacher', {
      what: "the device's agent on the other replica",
      timeoutMs: WITHIN_MS,
    });
    assert.equal((await b.app.store.devices.list()).length, 1);
  });

  test('the database away: a bound device still gets its token and connects (from the cache), a new device gets 503 with a logged error; back, codes again', async () => {
    const bound = { 'Device-Id': 'e4:00:00:00:00:32', 'Client-Id': '0b9a3c1e-7d55-4e0f-9a51-2c4f1e9b7d32' };
    const post = (srv: VoiceApp, headers: Record<string, string>): Promise<Response> =>
      fetch(`${srv.httpUrl}/xiaozhi/ota/`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', ...headers },
        body: '{}',
      });
    const code = ((await (await post(a, bound)).json()) as { activation?: { code: string } }).activation?.code ?? '';
    assert.equal((await a.app.devices?.bind(code))?.ok, true);
    await waitFor(() => b.app.devices?.isBound(bound['Device-Id'], bound['Client-Id']), {
      what: 'the binding on b',
      timeoutMs: WITHIN_MS,
    });

    await pg.down();
    try {
      const res = await post(b, bound);
      assert.equal(res.status, 200, 'a bound device is answered from the cache');
      const token = ((await res.json()) as { websocket: { token?: string } }).websocket.token ?? '';
      const dev = new DeviceSim({ url: b.wsUrl, deviceId: bound['Device-Id'], clientId: bound['Client-Id'], token });
      try {
        await dev.hello();
        assert.equal(dev.closeCode, null);
      } finally {
        dev.close();
      }
      const stranger = await post(b, { 'Device-Id': 'e4:00:00:00:00:33', 'Client-Id': 'new-while-down' });
      assert.equal(stranger.status, 503, 'no code without the database');
      assert.ok(
        b.logs.lines.some((l) => l.level === 50 && /store could not issue a code/.test(String(l.msg))),
        'logged at error',
      );
    } finally {
      await pg.up();
    }
    await waitFor(
      async () => (await post(b, { 'Device-Id': 'e4:00:00:00:00:33', 'Client-Id': 'new-while-down' })).status === 200,
      { what: 'codes again once the database is back', timeoutMs: 15_000 },
    );
  });
});
