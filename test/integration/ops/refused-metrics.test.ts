/** Refused device connections are counted by reason in /metrics (capacity, unauthorized), on either transport. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { DeviceSim } from '../../fixtures/device-sim.ts';
import { startFakeOpenAi, type FakeOpenAi } from '../../fixtures/fake-openai.ts';
import { startMeteredApp, type MeteredApp } from './helpers/metered-app.ts';
import { closeAll } from '../../helpers/close-all.ts';
import { MqttUdpClient, type MqttSection } from '../../helpers/mqtt-udp-client.ts';
import { waitFor } from '../../helpers/wait.ts';

let llm: FakeOpenAi;
let srv: MeteredApp;
before(async () => {
  llm = await startFakeOpenAi();
  srv = await startMeteredApp(llm.url, { server: { maxSessions: 1, auth: { tokens: ['t1'] } } });
});
after(async () => {
  await closeAll(srv, llm);
});

test('xiaozhi_connections_refused_total counts capacity and unauthorized refusals', async () => {
  const a = new DeviceSim({ url: srv.wsUrl, deviceId: 'cd:00:00:00:00:01', token: 't1' });
  await a.hello();
  await assert.rejects(
    new DeviceSim({ url: srv.wsUrl, deviceId: 'cd:00:00:00:00:02', token: 't1' }).opened,
    /HTTP 503/,
  );
  await assert.rejects(
    new DeviceSim({ url: srv.wsUrl, deviceId: 'cd:00:00:00:00:03', token: 'wrong' }).opened,
    /HTTP 401/,
  );
  const text = await (await fetch(`${srv.httpUrl}/metrics`)).text();
  assert.match(text, /xiaozhi_connections_refused_total\{reason="capacity"\} 1/);
  assert.match(text, /xiaozhi_connections_refused_total\{reason="unauthorized"\} 1/);
  a.close();
});

test('MQTT refusals are counted by the same metric: a hello at capacity, a CONNECT with a wrong password', async () => {
  const s = await startMeteredApp(llm.url, {
    server: { maxSessions: 1 },
    mqtt: { enabled: true, host: '127.0.0.1', port: 0, udpPort: 0 },
  });
  const clients: MqttUdpClient[] = [];
  const sectionFor = async (deviceId: string): Promise<MqttSection> => {
    const res = await fetch(`${s.httpUrl}/xiaozhi/ota/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'device-id': deviceId, 'client-id': 'refused-metrics' },
      body: JSON.stringify({ application: { version: '2.4.2' }, board: { type: 'bread-compact-wifi' } }),
    });
    return ((await res.json()) as { mqtt: MqttSection }).mqtt;
  };
  const refused = async (reason: string): Promise<string | undefined> => {
    const text = await (await fetch(`${s.httpUrl}/metrics`)).text();
    return new RegExp(`xiaozhi_connections_refused_total\\{reason="${reason}"\\} (\\d+)`).exec(text)?.[1];
  };
  try {
    const a = await MqttUdpClient.connect(await sectionFor('cd:00:00:00:01:01'));
    clients.push(a);
    await a.hello();
    const b = await MqttUdpClient.connect(await sectionFor('cd:00:00:00:01:02'));
    clients.push(b);
    // The server's one session is taken: this hello is refused (not answered).
    b.publish({
      type: 'hello',
      version: 3,
      transport: 'udp',
      audio_params: { format: 'opus', sample_rate: 16000, channels: 1, frame_duration: 60 },
    });
    assert.equal(await waitFor(() => refused('capacity'), { what: 'the capacity refusal counted' }), '1');
    await assert.rejects(MqttUdpClient.connect(await sectionFor('cd:00:00:00:01:03'), { password: 'wrong' }));
    assert.equal(await waitFor(() => refused('unauthorized'), { what: 'the refused CONNECT counted' }), '1');
  } finally {
    for (const c of clients) await c.close();
    await s.close();
  }
});
