/**
 * The firmware's MQTT+UDP transport end to end, with the simulated firmware
 * (test/fixtures/firmware) against the real server on loopback (embedded broker, UDP audio, Silero
 * VAD, pocketsphinx, the fake OpenAI LLM, espeak-ng): activation and OTA as the firmware does them,
 * the broker connection with the credentials OTA handed out, hello, spoken turns with real Opus
 * paced both ways (decoded and timed at the device), goodbye and a new session, `say` while the
 * session is idle and while the device is idle on the broker, and a revoke that disconnects the
 * device and refuses its credentials.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { LOOPBACK_MQTT_CONFIG, SimFirmware } from '../fixtures/firmware/firmware.ts';
import { startFakeOpenAi, type FakeOpenAi } from '../fixtures/fake-openai.ts';
import { speak16k, utterancePackets } from '../helpers/speech.ts';
import { startVoiceApp, type VoiceApp } from '../helpers/voice-app.ts';
import { closeAll } from '../helpers/close-all.ts';
import { waitFor } from '../helpers/wait.ts';

const ADMIN = 'admin-token-of-the-mqtt-firmware-test';
const DEVICE = { deviceId: 'e6:00:00:00:00:01', clientId: '3f1c2b7a-5d64-4c1e-9a0b-7e8f9d6c5b4a' };

describe('simulated firmware over MQTT+UDP end to end', { timeout: 180_000 }, () => {
  let llm: FakeOpenAi;
  let srv: VoiceApp;
  let fw: SimFirmware;
  let speech: Buffer[];

  const admin = async (
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: Record<string, unknown> }> => {
    const r = await fetch(`${srv.httpUrl}/api/admin${path}`, {
      method,
      headers: {
        authorization: `Bearer ${ADMIN}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: r.status, body: (await r.json()) as Record<string, unknown> };
  };

  /** One spoken turn in auto mode; returns the index of its first message and of its first frame. */
  const spokenTurn = async (): Promise<{ from: number; framesFrom: number; stt: string }> => {
    const from = fw.json.length;
    const framesFrom = fw.audio.length;
    fw.listenStart('auto');
    const sending = fw.sendPaced(speech, () => fw.json.slice(from).some((j) => j.msg.type === 'tts'));
    const stt = await fw.waitJson('stt', undefined, 20_000, from);
    await fw.waitJson('tts', 'start', 10_000, from);
    await fw.waitJson('tts', 'sentence_start', 10_000, from);
    await fw.waitJson('tts', 'stop', 20_000, from);
    await sending;
    return { from, framesFrom, stt: String(stt.text) };
  };

  before(async () => {
    llm = await startFakeOpenAi();
    srv = await startVoiceApp(llm.url, {
      ...LOOPBACK_MQTT_CONFIG,
      admin: { token: ADMIN },
      server: { auth: { mode: 'activation' } },
    });
    speech = await utterancePackets(speak16k('what is the weather today'));
    fw = new SimFirmware({ otaUrl: `${srv.httpUrl}/xiaozhi/ota/`, identity: DEVICE });
  });
  after(async () => {
    fw.close();
    await closeAll(srv, llm);
  });

  test('a hello published right after CONNACK is answered (OpenAudioChannel connecting first), for devices connecting together', async () => {
    // The firmware's OpenAudioChannel starts the MQTT client when it is not connected and
    // publishes the hello as soon as Connect returns: on loopback that is a round trip after CONNACK.
    const devices = Array.from(
      { length: 8 },
      (_, i) =>
        new SimFirmware({
          otaUrl: `${srv.httpUrl}/xiaozhi/ota/`,
          identity: { deviceId: `e6:00:00:00:01:0${i}`, clientId: `3f1c2b7a-5d64-4c1e-9a0b-7e8f9d6c5b0${i}` },
          helloTimeoutMs: 5000,
        }),
    );
    try {
      for (const d of devices) {
        const code = (await d.checkVersion()).activation?.code ?? '';
        assert.equal((await admin('POST', '/devices/bind', { code })).status, 201);
        assert.equal(await d.activate(), 200);
        await d.checkVersion();
      }
      const opened = await Promise.allSettled(devices.map((d) => d.openAudioChannel()));
      const failed = opened.flatMap((r, i) =>
        r.status === 'rejected' ? [`${devices[i]?.identity.deviceId}: ${String(r.reason)}`] : [],
      );
      assert.deepEqual(failed, [], 'every device got its server hello');
      // Leave as a firmware does: once the session is up (its device tools read), with a goodbye.
      for (const d of devices)
        await d.waitFor(
          'tools/list',
          () =>
            d.json.find((j) => j.msg.type === 'mcp' && (j.msg.payload as { method?: string }).method === 'tools/list'),
          10_000,
        );
      for (const d of devices) d.closeAudioChannel();
      await waitFor(() => srv.app.registry.size === 0, { what: 'every session to end', timeoutMs: 10_000 });
    } finally {
      for (const d of devices) d.close();
    }
  });

  test('activation, OTA with every mqtt field, broker, hello, two spoken turns paced both ways, goodbye, a new session', async () => {
    const logFrom = srv.logs.lines.length;
    // A new device speaks its code; the owner binds it; the firmware's loop asks OTA again.
    const first = await fw.checkVersion();
    const code = first.activation?.code ?? '';
    assert.match(code, /^\d{6}$/);
    assert.equal(await fw.activate(), 202);
    assert.equal((await admin('POST', '/devices/bind', { code })).status, 201);
    assert.equal(await fw.activate(), 200);
    await fw.boot();
    const ota = fw.ota?.answer as { mqtt: Record<string, unknown>; websocket: Record<string, unknown> };
    assert.match(String(ota.mqtt.endpoint), /^127\.0\.0\.1:\d+$/, 'endpoint is host:port');
    for (const k of ['client_id', 'username', 'password', 'publish_topic'])
      assert.ok(typeof ota.mqtt[k] === 'string' && ota.mqtt[k] !== '', `mqtt.${k}`);
    assert.equal(typeof ota.mqtt.keepalive, 'number');
    assert.equal(typeof ota.websocket.url, 'string', 'websocket is still offered');
    assert.ok(fw.mqttConnected);

    const params = await fw.openAudioChannel();
    assert.equal(params.key.length, 16);
    assert.equal(params.nonce[0], 0x01);
    assert.ok(params.sessionId.length > 0);
    assert.equal(params.server, '127.0.0.1');
    // The server reads the device's MCP tools over the same topic (the fixture answers as the firmware).
    await fw.waitFor(
      'tools/list',
      () => fw.json.find((j) => j.msg.type === 'mcp' && (j.msg.payload as { method?: string }).method === 'tools/list'),
      10_000,
    );

    const t1 = await spokenTurn();
    assert.match(t1.stt, /weather/i);
    const d1 = await fw.decodePlayed(t1.framesFrom);
    assert.equal(d1.bad, 0);
    assert.ok(d1.ms > 600, `answer audio ${d1.ms} ms`);
    assert.ok(d1.rms > 300, `answer has energy (rms ${d1.rms})`);
    // Paced, not dumped: the frames arrive over roughly their own duration.
    assert.ok(d1.spanMs > d1.ms * 0.6, `frames spread over ${d1.spanMs} ms for ${d1.ms} ms of audio`);
    assert.equal(fw.audio[t1.framesFrom]?.header.sequence, 1, 'the session’s downlink starts at sequence 1');
    assert.ok(
      fw.audio.slice(t1.framesFrom).every((f) => f.played),
      'every frame came between tts start and tts stop',
    );

    const t2 = await spokenTurn();
    assert.match(t2.stt, /weather/i);
    const d2 = await fw.decodePlayed(t2.framesFrom);
    assert.ok(d2.bad === 0 && d2.ms > 600 && d2.rms > 300, JSON.stringify(d2));
    assert.equal(
      fw.audio[t2.framesFrom]?.header.sequence,
      (fw.audio[t2.framesFrom - 1]?.header.sequence ?? 0) + 1,
      'the downlink sequence runs on across turns',
    );
    assert.deepEqual(fw.drops, { short: 0, type: 0, size: 0, old: 0 }, 'nothing the firmware would drop');
    assert.equal(fw.sequenceGaps, 0);

    // The device's goodbye ends the session; the broker connection stays.
    fw.closeAudioChannel();
    await waitFor(() => srv.app.registry.size === 0, {
      what: 'the session to end after the device goodbye',
      timeoutMs: 10_000,
    });
    assert.ok(fw.mqttConnected);

    // A new hello: a new session with its own key, nonce and sequences from 1 both ways.
    const again = await fw.openAudioChannel();
    assert.notEqual(again.sessionId, params.sessionId);
    assert.notDeepEqual(again.key, params.key);
    assert.notDeepEqual(again.nonce.subarray(4, 8), params.nonce.subarray(4, 8), 'a new ssrc');
    const t3 = await spokenTurn();
    assert.match(t3.stt, /weather/i);
    assert.equal(fw.audio[t3.framesFrom]?.header.sequence, 1, 'the new session’s downlink starts at 1 again');
    assert.deepEqual(fw.drops, { short: 0, type: 0, size: 0, old: 0 });

    const warnings = srv.logs.lines
      .slice(logFrom)
      .filter((l) => Number(l.level) >= 40)
      .map((l) => String(l.msg));
    assert.deepEqual(warnings, [], 'a device that follows the protocol leaves no warning or error in the log');
  });

  test('say: to the open, idle session it is spoken over UDP; to the device idle on the broker (firmware 2.4.2) it is an alert', async () => {
    assert.ok(fw.channelOpen, 'the session of the previous test is open');
    const from = fw.json.length;
    const framesFrom = fw.audio.length;
    const spoken = await admin('POST', `/devices/${DEVICE.deviceId}/say`, {
      text: 'The washing machine has finished.',
    });
    assert.deepEqual([spoken.status, spoken.body.status], [200, 'spoken']);
    await fw.waitJson('tts', 'start', 10_000, from);
    const sentence = await fw.waitJson('tts', 'sentence_start', 10_000, from);
    assert.match(String(sentence.text), /washing machine/i);
    await fw.waitJson('tts', 'stop', 20_000, from);
    const d = await fw.decodePlayed(framesFrom);
    assert.ok(d.bad === 0 && d.ms > 600 && d.rms > 300, JSON.stringify(d));

    // Idle on the broker: the firmware closes its audio channel after the conversation.
    fw.closeAudioChannel();
    await waitFor(() => srv.app.registry.size === 0, { what: 'the session to end', timeoutMs: 10_000 });
    const before = fw.json.length;
    const alerted = await admin('POST', `/devices/${DEVICE.deviceId}/say`, { text: 'Your tea is ready.' });
    assert.deepEqual([alerted.status, alerted.body.status], [200, 'alerted']);
    const alert = await fw.waitJson('alert', undefined, 10_000, before);
    assert.equal(alert.message, 'Your tea is ready.');
    for (const k of ['status', 'message', 'emotion'])
      assert.equal(typeof alert[k], 'string', `alert.${k} is a string (the firmware ignores it otherwise)`);
    assert.ok(fw.mqttConnected);
  });

  test('a revoke disconnects the device and its credentials are refused from then on', async () => {
    assert.ok(fw.mqttConnected);
    await fw.openAudioChannel();
    const revoked = await admin('DELETE', `/devices/${DEVICE.deviceId}`);
    assert.equal(revoked.status, 200);
    await fw.waitFor('the broker connection to drop', () => !fw.mqttConnected || undefined, 10_000);
    await waitFor(() => srv.app.registry.size === 0, { what: 'the session to end', timeoutMs: 10_000 });
    await assert.rejects(fw.startMqtt(), 'the stored credentials no longer open the broker');
    assert.ok(
      fw.lastConnackCode === 4 || fw.lastConnackCode === 5,
      `refused as bad credentials or not authorized (code ${fw.lastConnackCode})`,
    );
    // OTA asks for a new activation again.
    const answer = await fw.checkVersion();
    assert.match(answer.activation?.code ?? '', /^\d{6}$/);
  });
});
