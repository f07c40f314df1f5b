/**
 * A `say` queued while an MQTT device is away, delivered when it comes back, with the simulated
 * firmware (test/fixtures/firmware) against the real server on loopback. The firmware connects to
 * the broker and publishes its hello a moment later (OpenAudioChannel on a closed connection), and
 * ignores an `alert` that arrives in between: the message waits for the hello and is spoken in that
 * session once the device's first UDP datagram tells the server where its audio goes (audio sent
 * before that is dropped), and is recorded as delivered only then. A device that sends no hello
 * within `push.helloGraceMs` of its CONNECT gets it as an `alert` instead.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { LOOPBACK_MQTT_CONFIG, SimFirmware } from '../fixtures/firmware/firmware.ts';
import { startFakeOpenAi, type FakeOpenAi } from '../fixtures/fake-openai.ts';
import { utterancePackets } from '../helpers/speech.ts';
import { startVoiceApp, type VoiceApp } from '../helpers/voice-app.ts';
import { closeAll } from '../helpers/close-all.ts';
import { sleep, waitFor } from '../helpers/wait.ts';

const ADMIN = 'admin-token-of-the-mqtt-queued-say-test';
const GRACE_MS = 1000;

describe('a queued say over MQTT+UDP is heard after the hello, not lost at CONNECT', { timeout: 120_000 }, () => {
  let llm: FakeOpenAi;
  let srv: VoiceApp;
  let silence: Buffer[];
  const devices: SimFirmware[] = [];

  const say = async (deviceId: string, text: string): Promise<{ status: number; body: Record<string, unknown> }> => {
    const r = await fetch(`${srv.httpUrl}/api/admin/devices/${encodeURIComponent(deviceId)}/say`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ text }),
    });
    return { status: r.status, body: (await r.json()) as Record<string, unknown> };
  };

  const firmware = (deviceId: string, clientId: string): SimFirmware => {
    const fw = new SimFirmware({ otaUrl: `${srv.httpUrl}/xiaozhi/ota/`, identity: { deviceId, clientId } });
    devices.push(fw);
    return fw;
  };

  before(async () => {
    llm = await startFakeOpenAi();
    srv = await startVoiceApp(llm.url, {
      ...LOOPBACK_MQTT_CONFIG,
      admin: { token: ADMIN },
      push: { helloGraceMs: GRACE_MS },
    });
    silence = await utterancePackets(new Int16Array(16000 * 4), 100, 100);
  });
  after(async () => {
    for (const fw of devices) fw.close();
    await closeAll(srv, llm);
  });

  test('the firmware reconnecting to open an audio channel hears it as speech once its audio flows; it is recorded as delivered only then', async () => {
    const mac = 'e7:00:00:00:00:01';
    const fw = firmware(mac, '6d2f1a3c-0b4e-4f5a-8c7d-9e0f1a2b3c4d');
    // Known from OTA (which hands out the broker credentials), then away.
    await fw.checkVersion();
    const queued = await say(mac, 'Your parcel is at the front door.');
    assert.equal(queued.status, 202);
    const id = String(queued.body.id);

    // OpenAudioChannel on a closed connection: CONNECT, then the hello right after CONNACK.
    await fw.openAudioChannel();
    await sleep(GRACE_MS + 500);
    assert.deepEqual(
      fw.json.filter((j) => j.msg.type === 'alert' || j.msg.type === 'notify').map((j) => j.msg),
      [],
      'no alert for a device that said hello',
    );
    assert.equal(
      (await srv.app.store.pushMessages.get(id))?.state,
      'pending',
      'not recorded as delivered while the device cannot hear it',
    );

    // The device listens: its first datagram tells the server where to send audio.
    const from = fw.json.length;
    const framesFrom = fw.audio.length;
    fw.listenStart('auto');
    const sending = fw.sendPaced(silence, () => fw.json.slice(from).some((j) => j.msg.type === 'tts'));
    const sentence = await fw.waitJson('tts', 'sentence_start', 10_000, from);
    assert.equal(sentence.text, 'Your parcel is at the front door.');
    await fw.waitJson('tts', 'stop', 20_000, from);
    await sending;
    const played = await fw.decodePlayed(framesFrom);
    assert.ok(played.bad === 0 && played.ms > 800 && played.rms > 300, `heard as speech: ${JSON.stringify(played)}`);
    assert.equal((await srv.app.store.pushMessages.get(id))?.state, 'spoken');
    assert.deepEqual(
      fw.json.filter((j) => j.msg.type === 'alert').map((j) => j.msg),
      [],
      'never also as an alert',
    );
    assert.equal(llm.requests.length, 0, 'spoken as it is, without the model');
  });

  test('a device that connects and sends no hello within the grace gets it as an alert', async () => {
    const mac = 'e7:00:00:00:00:02';
    const fw = firmware(mac, '7e3a2b4d-1c5f-4a6b-9d8e-0f1a2b3c4d5e');
    await fw.checkVersion();
    const queued = await say(mac, 'The heating is back on.');
    assert.equal(queued.status, 202);
    const id = String(queued.body.id);
    // Connected at boot, idle: no audio channel.
    await fw.startMqtt();
    const alert = await fw.waitJson('alert', undefined, 10_000);
    assert.equal(alert.message, 'The heating is back on.');
    await waitFor(async () => (await srv.app.store.pushMessages.get(id))?.state === 'alerted', {
      what: 'the message recorded as alerted',
    });
  });
});
