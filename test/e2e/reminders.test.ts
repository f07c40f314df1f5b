/**
 * "Remind me in ten minutes to take the tea out", end to end: a real WebSocket device talks to the
 * real server, the fake OpenAI server calls `set_reminder` with PT10M, the answer tells the local
 * time in the agent's zone; the wall clock is moved ten minutes and the server's own scheduler
 * speaks "Reminder: take the tea out" on the still-connected device (tts start, the sentence,
 * decodable frames, tts stop), or on its next hello when it had gone. An agent whose tool policy
 * leaves the reminder tools out is not offered them; the admin API lists and cancels reminders.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeviceSim } from '../fixtures/device-sim.ts';
import {
  fakeText,
  fakeToolCalls,
  onToolResults,
  onUserText,
  startFakeOpenAi,
  type FakeOpenAi,
  type RecordedRequest,
} from '../fixtures/fake-openai.ts';
import { decodeDownlink } from '../helpers/speech.ts';
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
  let dir: string;
  // Friday 27 November 2026, 18:00 in Shanghai.
  const clock = { now: Date.parse('2026-11-27T10:00:00Z') };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'reminders-e2e-'));
    llm = await startFakeOpenAi();
    llm.rule(onUserText(/what time is it/i, fakeToolCalls([{ name: 'get_current_datetime', arguments: {} }])));
    llm.rule(
      onUserText(
        /remind me in ten minutes to take the tea out/i,
        fakeToolCalls([{ name: 'set_reminder', arguments: { when: 'PT10M', text: 'take the tea out' } }]),
      ),
    );
    // A short answer after a tool result: the device plays each answer in real time.
    llm.rule(onToolResults(fakeText('Done.')));
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
    srv = await startVoiceApp(llm.url, config, undefined, { store, now: () => clock.now });
  });
  after(async () => {
    await closeAll(srv, store, llm);
    rmSync(dir, { recursive: true, force: true });
  });

  const device = (deviceId: string): DeviceSim =>
    new DeviceSim({ url: srv.wsUrl, deviceId, clientId: `client-${deviceId}` });

  /** One turn on an open device; the model's requests of that turn. */
  async function turn(dev: DeviceSim, said: string): Promise<RecordedRequest[]> {
    const from = llm.requests.length;
    const seen = dev.json.length;
    dev.listen('detect', { text: said });
    await dev.waitJson('tts', 'stop', 20_000, seen);
    return llm.requests.slice(from);
  }

  async function ask(deviceId: string, said: string): Promise<RecordedRequest[]> {
    const dev = device(deviceId);
    try {
      await dev.hello();
      return await turn(dev, said);
    } finally {
      dev.close();
    }
  }

  /** Waits until the device has been told `text` to the end (its sentence, then tts stop). */
  async function heard(dev: DeviceSim, text: string, from = 0): Promise<void> {
    await dev.waitFor(
      `"${text}" spoken to the end`,
      () => {
        const at = dev.json.findIndex(
          (j, i) => i >= from && j.msg.type === 'tts' && j.msg.state === 'sentence_start' && j.msg.text === text,
        );
        return at >= 0 && dev.json.slice(at).some((j) => j.msg.type === 'tts' && j.msg.state === 'stop');
      },
      20_000,
    );
  }

  test('"Remind me in ten minutes to take the tea out": set with the local time, then spoken on the idle device when the clock reaches it', async () => {
    const dev = device(TEA);
    try {
      await dev.hello();
      const [first, observe] = await turn(dev, ASK);
      assert.ok(first && observe, 'the model was asked, then given the tool result');
      const set = first.body.tools?.find((t) => t.function.name === 'set_reminder');
      assert.match(
        set?.function.description ?? '',
        /local time now is Friday 2026-11-27 18:00 \(time zone Asia\/Shanghai\)/,
      );
      const system = first.body.messages[0]?.content;
      assert.match(typeof system === 'string' ? system : '', /Asia\/Shanghai/, "the prompt's time zone is the agent's");
      const result = observe.body.messages.find((m) => m.role === 'tool');
      assert.match(
        String(result?.content),
        /Reminder \d+ set for Friday 2026-11-27 18:10 \(Asia\/Shanghai\), in 10 minutes: "take the tea out"/,
      );

      const stored = await store.reminders.list(TEA);
      assert.deepEqual(
        stored.map((r) => ({ text: r.text, dueMs: r.dueMs, clientId: r.clientId, agent: r.agent })),
        [{ text: 'take the tea out', dueMs: clock.now + 600_000, clientId: `client-${TEA}`, agent: 'home' }],
      );

      const from = dev.json.length;
      const framesBefore = dev.audio.length;
      clock.now += 600_000;
      await heard(dev, 'Reminder: take the tea out', from);
      const d = await decodeDownlink(dev.audio.slice(framesBefore).map((a) => a.payload));
      assert.equal(d.bad, 0);
      assert.ok(d.ms > 800 && d.rms > 300, `audible speech: ${d.ms} ms, rms ${d.rms}`);
      assert.equal(
        llm.requests.filter((r) => JSON.stringify(r.body).includes('Reminder: take the tea out')).length,
        0,
        'spoken as it is, without the model',
      );
      assert.deepEqual(await store.reminders.list(TEA), []);
      const delivered = srv.logs.find('reminders: delivered');
      assert.equal(delivered.length, 1);
      assert.equal(delivered[0]?.status, 'spoken');
      assert.doesNotMatch(srv.logs.text(), /take the tea out/, 'the reminder text is logged only under pii');
    } finally {
      dev.close();
    }
  });

  test('a device that has gone hears its reminder at its next hello', async () => {
    await ask(TEA, 'Remind me in ten minutes to take the tea out');
    assert.equal((await store.reminders.list(TEA)).length, 1);
    clock.now += 600_000;
    // Nobody holds the device: the scheduler hands it over to the push queue.
    const end = Date.now() + 10_000;
    while ((await store.reminders.list(TEA)).length > 0) {
      if (Date.now() > end) throw new Error('the reminder was not handed over');
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(srv.logs.find('reminders: delivered').at(-1)?.status, 'queued');
    const dev = device(TEA);
    try {
      await dev.hello();
      await heard(dev, 'Reminder: take the tea out');
    } finally {
      dev.close();
    }
  });

  test("the date tool answers in the agent's zone too", async () => {
    const [, observe] = await ask(TEA, 'What time is it');
    const result = observe?.body.messages.find((m) => m.role === 'tool');
    assert.match(String(result?.content), /\(Asia\/Shanghai\)/);
    const [, plain] = await ask(PLAIN, 'What time is it');
    const other = plain?.body.messages.find((m) => m.role === 'tool');
    assert.match(
      String(other?.content),
      new RegExp(`\\(${Intl.DateTimeFormat().resolvedOptions().timeZone.replace('/', '\\/')}\\)`),
    );
  });

  test('an agent whose tool policy leaves them out is not offered the reminder tools', async () => {
    const [first] = await ask(PLAIN, 'what can you do');
    assert.ok(first);
    const names = (first.body.tools ?? []).map((t) => t.function.name);
    assert.ok(names.includes('get_current_datetime'));
    assert.ok(!names.some((n) => n.includes('reminder')), `offered: ${names.join(', ')}`);
  });

  test("the admin API lists a device's reminders and cancels one", async () => {
    const auth = { authorization: `Bearer ${TOKEN}` };
    const base = `${srv.httpUrl}/api/admin/devices/${encodeURIComponent(TEA)}/reminders`;
    const r = await store.reminders.add(
      {
        deviceId: TEA,
        clientId: `client-${TEA}`,
        agent: 'home',
        text: 'water the plants',
        dueMs: clock.now + 3_600_000,
      },
      50,
    );
    assert.ok(r !== 'full' && r !== 'store_full');
    const list = await fetch(base, { headers: auth });
    assert.equal(list.status, 200);
    assert.deepEqual(await list.json(), {
      deviceId: TEA,
      reminders: [
        {
          id: r.id,
          clientId: `client-${TEA}`,
          agent: 'home',
          text: 'water the plants',
          dueAt: new Date(clock.now + 3_600_000).toISOString(),
          state: 'pending',
          createdAt: r.createdAt,
        },
      ],
    });
    assert.equal((await fetch(`${base}/${r.id}`, { method: 'DELETE', headers: auth })).status, 200);
    const again = await fetch(`${base}/${r.id}`, { method: 'DELETE', headers: auth });
    assert.equal(again.status, 404);
    assert.equal((await fetch(`${base}/tea`, { method: 'DELETE', headers: auth })).status, 400);
    assert.deepEqual(await store.reminders.list(TEA), []);
    const doc = (await (await fetch(`${srv.httpUrl}/api/admin/openapi.json`, { headers: auth })).json()) as {
      paths: Record<string, unknown>;
    };
    assert.ok(doc.paths['/api/admin/devices/{deviceId}/reminders/{id}'], 'documented in the OpenAPI document');
  });
});
