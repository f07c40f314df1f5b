/**
 * `say` across two server replicas on one PostgreSQL, each wired as main.ts wires it
 * (assembleServer) on its own loopback port: asked on replica A, a device connected to replica B
 * hears it (B claims the row A wrote, announced by NOTIFY, speaks it and writes the outcome A
 * answers with). A device connected to neither gets it queued, and hears it when it says hello
 * to B. A message written without its notification is found by B's sweep.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DeviceSim } from '../../fixtures/device-sim.ts';
import { startFakeOpenAi, type FakeOpenAi } from '../../fixtures/fake-openai.ts';
import { startVoiceApp, type VoiceApp } from '../../helpers/voice-app.ts';
import { startPostgres, type TestPostgres } from '../../helpers/postgres.ts';
import { open, raw } from '../../helpers/store-targets.ts';
import type { Store } from '../../../store/store.ts';
import { waitFor } from '../../helpers/wait.ts';

const ADMIN = 'admin-token-for-the-push-replicas';

async function say(
  srv: VoiceApp,
  deviceId: string,
  text: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await fetch(`${srv.httpUrl}/api/admin/devices/${deviceId}/say`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ text }),
  });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

async function heard(dev: DeviceSim, text: string): Promise<void> {
  await dev.waitFor(
    `"${text}" spoken to the end`,
    () => {
      const at = dev.json.findIndex(
        (j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start' && j.msg.text === text,
      );
      return at >= 0 && dev.json.slice(at).some((j) => j.msg.type === 'tts' && j.msg.state === 'stop');
    },
    20_000,
  );
}

describe('say across two replicas on one PostgreSQL', { timeout: 120_000 }, () => {
  let pg: TestPostgres;
  let llm: FakeOpenAi;
  let storeA: Store;
  let storeB: Store;
  let a: VoiceApp;
  let b: VoiceApp;
  let dbUrl = '';
  before(async () => {
    pg = await startPostgres();
    const url = await pg.database();
    dbUrl = url;
    llm = await startFakeOpenAi();
    // Two replicas in one test process: their stores are opened here under two names.
    storeA = await open({ url, dataDir: '/tmp' }, { replica: 'replica-a' });
    storeB = await open({ url, dataDir: '/tmp' }, { replica: 'replica-b' });
    const config = { store: { url }, admin: { token: ADMIN } };
    [a, b] = await Promise.all([
      startVoiceApp(llm.url, config, undefined, { store: storeA }),
      startVoiceApp(llm.url, config, undefined, { store: storeB }),
    ]);
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await storeA?.close();
    await storeB?.close();
    await llm?.close();
    await pg?.stop();
  });

  test('asked on A, spoken by the device connected to B', async () => {
    const dev = new DeviceSim({ url: b.wsUrl, deviceId: 'ac:00:00:00:00:01', clientId: 'c1' });
    try {
      await dev.hello();
      // B records the device as it connects (off the session's path): A knows it from then on.
      await waitFor(async () => (await storeA.devices.get('ac:00:00:00:00:01')) !== undefined, {
        what: 'the device record',
        timeoutMs: 5000,
      });
      const r = await say(a, 'ac:00:00:00:00:01', 'Hello from the other replica.');
      assert.equal(r.status, 200);
      assert.deepEqual(r.body, { status: 'spoken', replica: 'replica-b' });
      await heard(dev, 'Hello from the other replica.');
      assert.ok(dev.audio.length > 10, 'with its audio');
    } finally {
      dev.close();
    }
  });

  test('a message the change feed did not announce (written without NOTIFY) is still found by the replica holding the device', async () => {
    const mac = 'ac:00:00:00:00:03';
    const dev = new DeviceSim({ url: b.wsUrl, deviceId: mac, clientId: 'c3' });
    try {
      await dev.hello();
      const db = await raw({ url: dbUrl, dataDir: '/tmp' });
      try {
        await db.db
          .insertInto('push_messages')
          .values({
            id: 'silent-1',
            device_id: mac,
            client_id: 'c3',
            text: 'Found without a notification.',
            interrupt: 0,
            source: 'admin',
            state: 'pending',
            claimed_by: null,
            created_ms: Date.now(),
            expires_ms: Date.now() + 60_000,
          })
          .execute();
      } finally {
        await db.db.destroy();
      }
      await heard(dev, 'Found without a notification.');
      assert.equal((await storeA.pushMessages.get('silent-1'))?.state, 'spoken');
      assert.equal((await storeA.pushMessages.get('silent-1'))?.claimedBy, 'replica-b');
    } finally {
      dev.close();
    }
  });

  test('held by neither: queued after the wait, then heard at the next hello on B', async () => {
    const mac = 'ac:00:00:00:00:02';
    const first = new DeviceSim({ url: a.wsUrl, deviceId: mac, clientId: 'c2' });
    await first.hello();
    first.close();
    await first.closed;
    await new Promise((resolve) => setTimeout(resolve, 300));
    const r = await say(a, mac, 'Your parcel has arrived.');
    assert.equal(r.status, 202);
    assert.equal(r.body.status, 'queued');
    const dev = new DeviceSim({ url: b.wsUrl, deviceId: mac, clientId: 'c2' });
    try {
      await dev.hello();
      await heard(dev, 'Your parcel has arrived.');
    } finally {
      dev.close();
    }
  });
});
