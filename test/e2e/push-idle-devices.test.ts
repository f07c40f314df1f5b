/**
 * `say` to a device that is connected to the MQTT broker but has no audio session (the transport's
 * `IdleDeviceLinks`, faked here: the real broker has its own end-to-end test). Firmware from
 * `push.notifyMinVersion` on (as reported at OTA) gets `notify` with a single-use URL serving the
 * text as mono Ogg/Opus in its agent's voice (decoded by ffmpeg; a second fetch is 404); older
 * firmware gets `alert` with the text. A message queued for a device not connected is delivered
 * when it connects to the broker. Reminders pass the per-device rate.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeOpenAi, type FakeOpenAi } from '../fixtures/fake-openai.ts';
import { startVoiceApp, type VoiceApp } from '../helpers/voice-app.ts';
import { closeAll } from '../helpers/close-all.ts';
import { ffmpegDecodeOgg } from '../helpers/ogg-decode.ts';
import type { IdleDeviceLink, IdleDeviceLinks } from '../../features/push/idle-links.ts';

const ADMIN = 'admin-token-for-the-idle-push-tests';

/** Devices "connected to the broker": each records what it was sent. */
class FakeLinks implements IdleDeviceLinks {
  readonly links = new Map<string, IdleDeviceLink & { sent: Array<Record<string, unknown>> }>();
  readonly #listeners = new Set<(link: IdleDeviceLink) => void>();

  connect(deviceId: string, clientId: string): IdleDeviceLink & { sent: Array<Record<string, unknown>> } {
    const sent: Array<Record<string, unknown>> = [];
    const link = {
      deviceId,
      clientId,
      inSession: false,
      sent,
      publish: (m: Record<string, unknown>) => (sent.push(m), true),
      audioReady: () => undefined,
    };
    this.links.set(deviceId, link);
    for (const l of this.#listeners) l(link);
    return link;
  }

  find(deviceId: string): IdleDeviceLink | undefined {
    return this.links.get(deviceId);
  }

  onConnected(listener: (link: IdleDeviceLink) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}

describe('say to idle MQTT devices', { timeout: 120_000 }, () => {
  let llm: FakeOpenAi;
  let srv: VoiceApp;
  const links = new FakeLinks();

  async function ota(deviceId: string, clientId: string, version: string): Promise<void> {
    const r = await fetch(`${srv.httpUrl}/xiaozhi/ota/`, {
      method: 'POST',
      headers: { 'device-id': deviceId, 'client-id': clientId, 'content-type': 'application/json' },
      body: JSON.stringify({ application: { version }, board: { type: 'sim-board' } }),
    });
    assert.equal(r.status, 200);
  }

  async function say(deviceId: string, text: string): Promise<{ status: number; body: Record<string, unknown> }> {
    const r = await fetch(`${srv.httpUrl}/api/admin/devices/${deviceId}/say`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ text }),
    });
    return { status: r.status, body: (await r.json()) as Record<string, unknown> };
  }

  before(async () => {
    llm = await startFakeOpenAi();
    // Devices are told this base; the test fetches the path from the server itself.
    srv = await startVoiceApp(
      llm.url,
      {
        admin: { token: ADMIN },
        push: { publicHttpUrl: 'http://speaker-lan.example:8000', rate: { perSecond: 0.01, burst: 1 } },
      },
      undefined,
      { idleLinks: links },
    );
  });
  after(async () => {
    await closeAll(srv, llm);
  });

  test('new firmware gets notify: a single-use URL of mono Ogg/Opus speech; a second fetch is 404', async () => {
    await ota('aa:00:00:00:00:01', 'c1', '2.5.0');
    const link = links.connect('aa:00:00:00:00:01', 'c1');
    const r = await say('aa:00:00:00:00:01', 'The laundry is done, take it out please.');
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.status, 'notified');
    assert.equal(link.sent.length, 1);
    const msg = link.sent[0] as { type: string; audio_url: string; subtitles: string[] };
    assert.equal(msg.type, 'notify');
    assert.deepEqual(msg.subtitles, ['The laundry is done, take it out please.']);
    const url = new URL(msg.audio_url);
    assert.equal(url.origin, 'http://speaker-lan.example:8000');
    assert.match(url.pathname, /^\/push\/audio\/[A-Za-z0-9_-]{32}\.ogg$/);
    const got = await fetch(`${srv.httpUrl}${url.pathname}`);
    assert.equal(got.status, 200);
    assert.equal(got.headers.get('content-type'), 'audio/ogg');
    const d = ffmpegDecodeOgg(Buffer.from(await got.arrayBuffer()));
    assert.equal(d.status, 0);
    assert.equal(d.stderr, '');
    assert.ok(d.pcm.length / 16000 > 1, `over a second of speech, got ${d.pcm.length / 16000} s`);
    assert.ok(d.rms > 300, `audible, rms ${d.rms}`);
    assert.equal((await fetch(`${srv.httpUrl}${url.pathname}`)).status, 404, 'single use');
    assert.equal((await fetch(`${srv.httpUrl}/push/audio/${'A'.repeat(32)}.ogg`)).status, 404, 'a guessed name');
  });

  test('older firmware gets alert with the text (three strings); past the rate 429, while a reminder still passes', async () => {
    await ota('aa:00:00:00:00:02', 'c2', '2.4.2');
    const link = links.connect('aa:00:00:00:00:02', 'c2');
    const r = await say('aa:00:00:00:00:02', 'Dinner is ready.');
    assert.equal(r.body.status, 'alerted');
    assert.deepEqual(link.sent, [
      { type: 'alert', status: 'Message', message: 'Dinner is ready.', emotion: 'neutral' },
    ]);
    assert.equal((await say('aa:00:00:00:00:02', 'Again.')).status, 429);
    const reminder = await srv.push.say({
      deviceId: 'aa:00:00:00:00:02',
      text: 'Take the tea out.',
      source: 'reminder',
    });
    assert.equal(reminder.status, 'alerted');
    assert.deepEqual(link.sent.at(-1), {
      type: 'alert',
      status: 'Reminder',
      message: 'Take the tea out.',
      emotion: 'neutral',
    });
  });

  test('a message queued while the device is away is delivered when it connects to the broker', async () => {
    await ota('aa:00:00:00:00:03', 'c3', '1.0.0');
    const r = await say('aa:00:00:00:00:03', 'Welcome back.');
    assert.equal(r.status, 202);
    const link = links.connect('aa:00:00:00:00:03', 'c3');
    const deadline = Date.now() + 10_000;
    while (link.sent.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual(link.sent, [{ type: 'alert', status: 'Message', message: 'Welcome back.', emotion: 'neutral' }]);
  });
});
