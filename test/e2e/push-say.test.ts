/**
 * Server-initiated speech end to end: the real server (media worker, embedded voice, the fake
 * OpenAI model) on a loopback port, real WebSocket devices, and the admin API's
 * `POST /api/admin/devices/{deviceId}/say`. An idle device hears the text at once (tts start,
 * sentence, decodable Opus frames, tts stop); a device in a turn hears it after the answer, or at
 * once with `interrupt`; an offline device gets it queued and hears it at its next hello; with
 * the queue off an offline device is refused; the per-device rate answers 429.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DeviceSim } from '../fixtures/device-sim.ts';
import { fakeText, startFakeOpenAi, type FakeOpenAi } from '../fixtures/fake-openai.ts';
import { startVoiceApp, type VoiceApp } from '../helpers/voice-app.ts';
import { closeAll } from '../helpers/close-all.ts';
import { decodeDownlink } from '../helpers/speech.ts';

const ADMIN = 'admin-token-for-the-push-tests';

async function say(
  srv: VoiceApp,
  deviceId: string,
  body: Record<string, unknown>,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await fetch(`${srv.httpUrl}/api/admin/devices/${encodeURIComponent(deviceId)}/say`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

/** The `sentence_start` texts the device received from index `from` on. */
function sentences(dev: DeviceSim, from = 0): string[] {
  return dev.json
    .slice(from)
    .filter((j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start')
    .map((j) => String(j.msg.text));
}

/** Waits for a `tts stop` after the sentence `text` was announced. */
async function heard(dev: DeviceSim, text: string, timeoutMs = 20_000): Promise<void> {
  await dev.waitFor(
    `"${text}" spoken to the end`,
    () => {
      const at = dev.json.findIndex(
        (j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start' && j.msg.text === text,
      );
      return at >= 0 && dev.json.slice(at).some((j) => j.msg.type === 'tts' && j.msg.state === 'stop');
    },
    timeoutMs,
  );
}

describe('say: server-initiated speech on WebSocket devices', { timeout: 180_000 }, () => {
  let llm: FakeOpenAi;
  let srv: VoiceApp;
  before(async () => {
    llm = await startFakeOpenAi();
    srv = await startVoiceApp(llm.url, { admin: { token: ADMIN }, push: { rate: { perSecond: 0.01, burst: 3 } } });
  });
  after(async () => {
    await closeAll(srv, llm);
  });

  test('an idle device that never listened hears it at once: tts start, the sentence, decodable frames, tts stop; then it listens again', async () => {
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId: 'a9:00:00:00:00:01', clientId: 'c1' });
    try {
      await dev.hello();
      const r = await say(srv, 'a9:00:00:00:00:01', { text: 'The washing machine has finished.' });
      assert.equal(r.status, 200);
      assert.equal(r.body.status, 'spoken');
      await heard(dev, 'The washing machine has finished.');
      const kinds = dev.timeline.map((t) =>
        t.kind === 'audio' ? 'audio' : `${String(t.msg.type)}:${String(t.msg.state ?? '')}`,
      );
      const start = kinds.indexOf('tts:start');
      const stop = kinds.lastIndexOf('tts:stop');
      assert.ok(start >= 0 && stop > start, `tts start before tts stop: ${kinds.join(',')}`);
      assert.ok(
        kinds.slice(start, stop).includes('audio') && !kinds.slice(0, start).includes('audio'),
        'frames between tts start and tts stop',
      );
      const d = await decodeDownlink(dev.audio.map((a) => a.payload));
      assert.equal(d.bad, 0);
      assert.ok(d.ms > 800, `about a second of speech at least, got ${d.ms} ms`);
      assert.ok(d.rms > 300, `audible, rms ${d.rms}`);
      // No model was asked: the text is spoken as it is.
      assert.equal(llm.requests.length, 0);
      // Auto mode: the session listens again after it, as the firmware does after tts stop.
      const session = srv.app.registry.list().find((s) => s.deviceId === 'a9:00:00:00:00:01');
      await dev.waitFor('the session listening again', () => session?.state === 'listening');
    } finally {
      dev.close();
    }
  });

  test('a push-to-talk (manual) device goes idle after it, as the firmware does after tts stop', async () => {
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId: 'a9:00:00:00:00:04', clientId: 'c4' });
    try {
      await dev.hello();
      dev.listen('start', { mode: 'manual' });
      const session = srv.app.registry.list().find((s) => s.deviceId === 'a9:00:00:00:00:04');
      await dev.waitFor('the session listening', () => session?.state === 'listening');
      assert.equal((await say(srv, 'a9:00:00:00:00:04', { text: 'Short message.' })).body.status, 'spoken');
      await heard(dev, 'Short message.');
      await dev.waitFor('the session idle', () => session?.state === 'idle');
    } finally {
      dev.close();
    }
  });

  test('the OpenAPI document describes the route and each status it answers with', async () => {
    const r = await fetch(`${srv.httpUrl}/api/admin/openapi.json`, { headers: { authorization: `Bearer ${ADMIN}` } });
    const doc = (await r.json()) as {
      paths: Record<string, { post?: { responses: Record<string, unknown>; requestBody?: unknown } }>;
    };
    const op = doc.paths['/api/admin/devices/{deviceId}/say']?.post;
    assert.ok(op?.requestBody, 'with its body');
    assert.deepEqual(Object.keys(op.responses).sort(), ['200', '202', '400', '401', '403', '404', '409', '429', '503']);
  });

  test('during a turn it waits for the answer (after_turn); with interrupt the turn is aborted and it is spoken at once', async () => {
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId: 'a9:00:00:00:00:02', clientId: 'c2' });
    try {
      await dev.hello();
      llm.script(fakeText('It will be sunny all day.', { firstDelayMs: 1500 }));
      dev.listen('detect', { text: 'What is the weather?' });
      await dev.waitJson('stt');
      const r = await say(srv, 'a9:00:00:00:00:02', { text: 'Your tea is ready.' });
      assert.equal(r.status, 200);
      assert.equal(r.body.status, 'after_turn');
      await heard(dev, 'Your tea is ready.');
      assert.deepEqual(
        sentences(dev),
        ['It will be sunny all day.', 'Your tea is ready.'],
        'the answer first, then the message',
      );

      const from = dev.json.length;
      llm.script(fakeText('A very long answer that should never be heard.', { firstDelayMs: 3000 }));
      dev.listen('detect', { text: 'Tell me a story.' });
      await dev.waitJson('stt', undefined, 10_000, from);
      const i = await say(srv, 'a9:00:00:00:00:02', { text: 'The door bell rang.', interrupt: true });
      assert.equal(i.body.status, 'spoken');
      await heard(dev, 'The door bell rang.');
      // Give the aborted model answer the time it would have needed.
      await new Promise((resolve) => setTimeout(resolve, 3500));
      assert.deepEqual(sentences(dev, from), ['The door bell rang.']);
    } finally {
      dev.close();
    }
  });

  test('reminders are not rated; past 8 waiting for a turn, the oldest waiting ones are dropped', async () => {
    const mac = 'a9:00:00:00:00:05';
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId: mac, clientId: 'c5' });
    try {
      await dev.hello();
      llm.script(fakeText('Just a moment.', { firstDelayMs: 1500 }));
      dev.listen('detect', { text: 'Hold on.' });
      await dev.waitJson('stt');
      const outcomes: string[] = [];
      for (let n = 1; n <= 10; n++)
        outcomes.push((await srv.push.say({ deviceId: mac, text: `Reminder ${n}.`, source: 'reminder' })).status);
      assert.deepEqual(outcomes, Array(10).fill('after_turn'));
      await heard(dev, 'Reminder 10.', 40_000);
      assert.deepEqual(sentences(dev), ['Just a moment.', ...[3, 4, 5, 6, 7, 8, 9, 10].map((n) => `Reminder ${n}.`)]);
    } finally {
      dev.close();
    }
  });

  test('an offline device gets it queued (202) and hears it at its next hello; unknown devices are 404; past the rate 429', async () => {
    const mac = 'a9:00:00:00:00:03';
    // Seen once (a session), then gone.
    const first = new DeviceSim({ url: srv.wsUrl, deviceId: mac, clientId: 'c3' });
    await first.hello();
    first.close();
    await first.closed;
    await new Promise((resolve) => setTimeout(resolve, 200));

    const q = await say(srv, mac, { text: 'You missed a call.' });
    assert.equal(q.status, 202);
    assert.equal(q.body.status, 'queued');
    assert.equal(typeof q.body.id, 'string');

    const back = new DeviceSim({ url: srv.wsUrl, deviceId: mac, clientId: 'c3' });
    try {
      await back.hello();
      await heard(back, 'You missed a call.');
      const d = await decodeDownlink(back.audio.map((a) => a.payload));
      assert.equal(d.bad, 0);
      assert.ok(d.ms > 500);
    } finally {
      back.close();
    }
    // Delivered once: a later session hears nothing.
    await back.closed;
    const again = new DeviceSim({ url: srv.wsUrl, deviceId: mac, clientId: 'c3' });
    try {
      await again.hello();
      await new Promise((resolve) => setTimeout(resolve, 1000));
      assert.deepEqual(sentences(again), []);
    } finally {
      again.close();
    }

    const unknown = await say(srv, 'a9:00:00:00:00:ff', { text: 'Hello?' });
    assert.equal(unknown.status, 404);
    assert.deepEqual(unknown.body, { status: 'refused', reason: 'unknown_device' });
    const bad = await say(srv, mac, { text: '   ' });
    assert.equal(bad.status, 400);

    // Burst 3, then (nearly) nothing: the device above already spent one token.
    const statuses: number[] = [];
    for (let n = 0; n < 3; n++) statuses.push((await say(srv, mac, { text: `Message ${n}.` })).status);
    assert.deepEqual(statuses, [202, 202, 429]);
  });
});

describe('say with the queue off', { timeout: 120_000 }, () => {
  let llm: FakeOpenAi;
  let srv: VoiceApp;
  before(async () => {
    llm = await startFakeOpenAi();
    srv = await startVoiceApp(llm.url, { admin: { token: ADMIN }, push: { queueTtlMs: 0 } });
  });
  after(async () => {
    await closeAll(srv, llm);
  });

  test('an offline device is refused with 409 offline, and hears nothing when it comes back', async () => {
    const mac = 'a9:00:00:00:01:01';
    const first = new DeviceSim({ url: srv.wsUrl, deviceId: mac, clientId: 'c1' });
    await first.hello();
    first.close();
    await first.closed;
    await new Promise((resolve) => setTimeout(resolve, 200));
    const r = await say(srv, mac, { text: 'Nobody hears this.' });
    assert.equal(r.status, 409);
    assert.deepEqual(r.body, { status: 'refused', reason: 'offline' });
    const back = new DeviceSim({ url: srv.wsUrl, deviceId: mac, clientId: 'c1' });
    try {
      await back.hello();
      await new Promise((resolve) => setTimeout(resolve, 1000));
      assert.deepEqual(sentences(back), []);
    } finally {
      back.close();
    }
  });
});
