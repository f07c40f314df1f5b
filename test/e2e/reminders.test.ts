/**
 * "Remind me in ten minutes to take the tea out", end to end: a real WebSocket device talks to the
 * real server, the fake OpenAI server calls `set_reminder` with PT10M, the answer tells the local
 * time in the agent's zone; the wall clock is moved ten minutes and the server's own scheduler
 * hands "Reminder: take the tea out" to the Push (a recording one: delivery has its own tests).
 * An agent whose tool policy leaves the reminder tools out is not offered them; the admin API
 * lists and cancels a device's reminders.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeviceSim } from '../fixtures/device-sim.ts';
import { fakeToolCalls, onUserText, startFakeOpenAi, type FakeOpenAi, type RecordedRequest } from '../fixtures/fake-openai.ts';
import { recordingPush, type RecordingPush } from '../fixtures/recording-push.ts';
import { startVoiceApp, type VoiceApp } from '../helpers/voice-app.ts';
import { closeAll } from '../helpers/close-all.ts';
import { open } from '../helpers/store-targets.ts';
import type { Store } from '../../store/store.ts';

const TEA = 'a7:00:00:00:00:31';
const PLAIN = 'a7:00:00:00:00:32';
const ASK = 'Remind me in ten minutes to take the tea out';
const TOKEN = 'reminders-admin-token-0123456789abcdef';

describe('reminders end to end', { timeout: 120_000 }, () => {
  let llm: FakeOpenAi;
  let srv: VoiceApp;
  let store: Store;
  let push: RecordingPush;
  let dir: string;
  // Friday 27 November 2026, 18:00 in Shanghai.
  const clock = { now: Date.parse('2026-11-27T10:00:00Z') };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'reminders-e2e-'));
    llm = await startFakeOpenAi();
    llm.rule(onUserText(/what time is it/i, fakeToolCalls([{ name: 'get_current_datetime', arguments: {} }])));
    llm.rule(onUserText(/remind me in ten minutes to take the tea out/i, fakeToolCalls([{ name: 'set_reminder', arguments: { when: 'PT10M', text: 'take the tea out' } }])));
    push = recordingPush();
    const config = {
      admin: { token: TOKEN },
      server: { dataDir: dir },
      store: { url: 'sqlite:reminders.db' },
      agents: [
        { name: 'home', timeZone: 'Asia/Shanghai' },
        { name: 'plain', devices: [PLAIN], tools: { local: ['get_current_datetime'] } },
      ],
    };
    store = await open({ url: 'sqlite:reminders.db', dataDir: dir });
    srv = await startVoiceApp(llm.url, config, undefined, { store, push, now: () => clock.now });
  });
  after(async () => {
    await closeAll(srv, store, llm);
    rmSync(dir, { recursive: true, force: true });
  });

  async function ask(deviceId: string, said: string): Promise<RecordedRequest[]> {
    const from = llm.requests.length;
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId, clientId: `client-${deviceId}` });
    try {
      await dev.hello();
      dev.listen('detect', { text: said });
      await dev.waitJson('tts', 'stop', 20_000);
    } finally {
      dev.close();
    }
    return llm.requests.slice(from);
  }

  test('"Remind me in ten minutes to take the tea out": set with the local time, then spoken when the clock reaches it', async () => {
    const [first, observe] = await ask(TEA, ASK);
    assert.ok(first && observe, 'the model was asked, then given the tool result');
    const set = first.body.tools?.find((t) => t.function.name === 'set_reminder');
    assert.match(set?.function.description ?? '', /local time now is Friday 2026-11-27 18:00 \(time zone Asia\/Shanghai\)/);
    const system = first.body.messages[0]?.content;
    assert.match(typeof system === 'string' ? system : '', /Asia\/Shanghai/, 'the prompt\'s time zone is the agent\'s');
    const result = observe.body.messages.find((m) => m.role === 'tool');
    assert.match(String(result?.content), /Reminder \d+ set for Friday 2026-11-27 18:10 \(Asia\/Shanghai\), in 10 minutes: "take the tea out"/);

    const stored = await store.reminders.list(TEA);
    assert.deepEqual(stored.map((r) => ({ text: r.text, dueMs: r.dueMs, clientId: r.clientId, agent: r.agent })), [
      { text: 'take the tea out', dueMs: clock.now + 600_000, clientId: `client-${TEA}`, agent: 'home' },
    ]);
    assert.deepEqual(push.said, []);

    clock.now += 600_000;
    const [said] = await push.waitFor(1);
    assert.deepEqual(said, { deviceId: TEA, clientId: `client-${TEA}`, text: 'Reminder: take the tea out', source: 'reminder' });
    assert.deepEqual(await store.reminders.list(TEA), []);
    assert.equal(srv.logs.find('reminders: delivered').length, 1);
    assert.doesNotMatch(srv.logs.text(), /take the tea out/, 'the reminder text is logged only under pii');
  });

  test('the date tool answers in the agent\'s zone too', async () => {
    const [, observe] = await ask(TEA, 'What time is it');
    const result = observe?.body.messages.find((m) => m.role === 'tool');
    assert.match(String(result?.content), /\(Asia\/Shanghai\)/);
    const [, plain] = await ask(PLAIN, 'What time is it');
    const other = plain?.body.messages.find((m) => m.role === 'tool');
    assert.match(String(other?.content), new RegExp(`\\(${Intl.DateTimeFormat().resolvedOptions().timeZone.replace('/', '\\/')}\\)`));
  });

  test('an agent whose tool policy leaves them out is not offered the reminder tools', async () => {
    const [first] = await ask(PLAIN, 'what can you do');
    assert.ok(first);
    const names = (first.body.tools ?? []).map((t) => t.function.name);
    assert.ok(names.includes('get_current_datetime'));
    assert.ok(!names.some((n) => n.includes('reminder')), `offered: ${names.join(', ')}`);
  });

  test('the admin API lists a device\'s reminders and cancels one', async () => {
    const auth = { authorization: `Bearer ${TOKEN}` };
    const base = `${srv.httpUrl}/api/admin/devices/${encodeURIComponent(TEA)}/reminders`;
    const r = await store.reminders.add({ deviceId: TEA, clientId: `client-${TEA}`, agent: 'home', text: 'water the plants', dueMs: clock.now + 3_600_000 }, 50);
    assert.ok(r !== 'full');
    const list = await fetch(base, { headers: auth });
    assert.equal(list.status, 200);
    assert.deepEqual(await list.json(), {
      deviceId: TEA,
      reminders: [{ id: r.id, clientId: `client-${TEA}`, agent: 'home', text: 'water the plants', dueAt: new Date(clock.now + 3_600_000).toISOString(), state: 'pending', createdAt: r.createdAt }],
    });
    assert.equal((await fetch(`${base}/${r.id}`, { method: 'DELETE', headers: auth })).status, 200);
    const again = await fetch(`${base}/${r.id}`, { method: 'DELETE', headers: auth });
    assert.equal(again.status, 404);
    assert.equal((await fetch(`${base}/tea`, { method: 'DELETE', headers: auth })).status, 400);
    assert.deepEqual(await store.reminders.list(TEA), []);
    const doc = (await (await fetch(`${srv.httpUrl}/api/admin/openapi.json`, { headers: auth })).json()) as { paths: Record<string, unknown> };
    assert.ok(doc.paths['/api/admin/devices/{deviceId}/reminders/{id}'], 'documented in the OpenAPI document');
  });
});
