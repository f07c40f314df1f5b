/**
 * A voice turn over the firmware's MQTT+UDP transport, end to end: OTA hands out the broker's
 * endpoint and the device's credentials, the device connects (the `mqtt` package), says hello,
 * and sends flite speech as encrypted Opus datagrams at real-time pace; the answer (pocketsphinx,
 * fake OpenAI-compatible LLM, espeak-ng) comes back as datagrams the device decrypts and decodes.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeOpenAi, type FakeOpenAi } from '../fixtures/fake-openai.ts';
import { decodeDownlink, speak16k, utterancePackets } from '../helpers/speech.ts';
import { startVoiceApp, type VoiceApp } from '../helpers/voice-app.ts';
import { closeAll } from '../helpers/close-all.ts';
import { MqttUdpClient, type MqttSection } from '../helpers/mqtt-udp-client.ts';
import { sleep, waitFor } from '../helpers/wait.ts';

async function ota(srv: VoiceApp, deviceId: string, clientId: string): Promise<Record<string, unknown>> {
  const res = await fetch(`${srv.httpUrl}/xiaozhi/ota/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'device-id': deviceId, 'client-id': clientId },
    body: JSON.stringify({ application: { version: '2.4.2' }, board: { type: 'bread-compact-wifi' } }),
  });
  assert.equal(res.status, 200);
  return (await res.json()) as Record<string, unknown>;
}

describe('voice turn over MQTT+UDP', () => {
  let llm: FakeOpenAi;
  let srv: VoiceApp;
  let packets: Buffer[];
  before(async () => {
    llm = await startFakeOpenAi();
    srv = await startVoiceApp(llm.url, { mqtt: { enabled: true, host: '127.0.0.1', port: 0, udpPort: 0 } });
    packets = await utterancePackets(speak16k('what is the weather today'));
  });
  after(async () => {
    await closeAll(srv, llm);
  });

  test('OTA offers mqtt; hello, speech up, a decodable paced answer down, goodbye', async () => {
    const answer = await ota(srv, 'e3:00:00:00:00:01', 'mqtt-turn-1');
    const section = answer.mqtt as MqttSection;
    assert.ok(section, 'OTA has an mqtt section');
    assert.equal(section.endpoint, `127.0.0.1:${srv.mqtt?.ports.mqtt}`);
    assert.ok(answer.websocket, 'websocket is still offered');
    const dev = await MqttUdpClient.connect(section);
    try {
      const hello = await dev.hello();
      assert.equal(hello.transport, 'udp');
      const rate = (hello.audio_params as { sample_rate: 16000 | 24000 }).sample_rate;
      dev.publish({ type: 'listen', state: 'start', mode: 'auto', session_id: dev.sessionId });
      const start = performance.now();
      for (let i = 0; i < packets.length; i++) {
        if (dev.json.some((j) => j.msg.type === 'tts')) break;
        const wait = start + i * 60 - performance.now();
        if (wait > 0) await sleep(wait);
        dev.sendOpus(packets[i] as Buffer);
      }
      const stt = await dev.waitJson('stt', () => true, 20_000);
      assert.match(String(stt.text), /weather/i, `recognised: ${String(stt.text)}`);
      await dev.waitJson('tts', (m) => m.state === 'start', 10_000);
      await dev.waitJson('tts', (m) => m.state === 'stop', 20_000);
      const decoded = await decodeDownlink(
        dev.audio.map((a) => a.payload),
        rate,
      );
      assert.equal(decoded.bad, 0);
      assert.equal(dev.downlinkDropped, 0);
      assert.ok(decoded.ms > 600, `answer audio ${decoded.ms} ms`);
      assert.ok(decoded.rms > 300, `answer has energy (rms ${decoded.rms})`);
      const span = (dev.audio.at(-1)?.at ?? 0) - (dev.audio[0]?.at ?? 0);
      assert.ok(span > decoded.ms * 0.6, `frames spread over ${span} ms for ${decoded.ms} ms of audio`);
      // Counted at scrape: the device connected, and a datagram dropped.
      dev.sendRaw(Buffer.from([1, 0, 0]));
      await waitFor(
        async () =>
          /xiaozhi_udp_datagrams_dropped_total\{reason="short"\} 1/.test(
            await (await fetch(`${srv.httpUrl}/metrics`)).text(),
          ),
        { what: 'the drop in /metrics' },
      );
      assert.match(await (await fetch(`${srv.httpUrl}/metrics`)).text(), /^xiaozhi_mqtt_devices 1$/m);
      // The device ends the audio session; its MQTT connection stays.
      dev.publish({ type: 'goodbye', session_id: dev.sessionId });
      await waitFor(() => srv.app.registry.size === 0, { what: 'the session to end' });
      assert.ok(dev.mqtt.connected);
      assert.equal(srv.mqtt?.find('e3:00:00:00:00:01')?.inSession, false);
      const bad = srv.logs.lines.filter((l) => Number(l.level) >= 40).map((l) => String(l.msg));
      assert.deepEqual(bad, []);
    } finally {
      await dev.close();
    }
  });
});
