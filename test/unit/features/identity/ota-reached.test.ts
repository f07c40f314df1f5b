/**
 * The OTA route tells where an identified device reached it (the vision URL of its MQTT sessions)
 * only for a Host that is one of the server's names: a stranger's request naming another host for
 * a device's pair cannot point that device's photos elsewhere.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import { otaRoutes, OwnHosts } from '../../../../features/identity/index.ts';
import { DeviceEndpoints } from '../../../../transport/mqtt/endpoints.ts';

test("OTA passes on the origin a device reached it by, only when the Host is one of the server's names", async () => {
  const reached: Array<{ deviceId: string; clientId: string; origin: string }> = [];
  const app = Fastify();
  await app.register(otaRoutes, {
    publicWsUrl: '',
    wsPath: '/xiaozhi/v1/',
    mode: 'open',
    allowedOrigins: [],
    protocolVersion: 1,
    timezoneOffsetMinutes: 0,
    firmware: { version: '', url: '', force: false },
    ownHosts: new OwnHosts({ publicHosts: ['voice.example.org'], publicWsUrl: '' }),
    onReached: (r) => reached.push(r),
  });
  try {
    const ota = (host: string, more: Record<string, string> = {}) =>
      app.inject({
        method: 'POST',
        url: '/xiaozhi/ota/',
        headers: { host, 'device-id': 'aa:bb:cc:dd:ee:01', 'client-id': 'client-1', ...more },
        payload: '{}',
      });
    assert.equal((await ota('127.0.0.1:8000')).statusCode, 200);
    assert.equal((await ota('voice.example.org', { 'x-forwarded-proto': 'https' })).statusCode, 200);
    assert.equal((await ota('camera-thief.example:8080')).statusCode, 200, 'answered as ever');
    assert.equal((await ota('voice.example.org', { 'device-id': '' })).statusCode, 200, 'no identity');
    assert.deepEqual(reached, [
      { deviceId: 'aa:bb:cc:dd:ee:01', clientId: 'client-1', origin: 'http://127.0.0.1:8000' },
      { deviceId: 'aa:bb:cc:dd:ee:01', clientId: 'client-1', origin: 'https://voice.example.org' },
    ]);
  } finally {
    await app.close();
  }
});

test("OTA tells the MQTT side whether the Host is one of the server's names; a stranger's Host is not remembered for the device's UDP address", async () => {
  const asked: Array<{ host: string; hostIsOwn: boolean }> = [];
  const endpoints = new DeviceEndpoints({ publicEndpoint: '', udpPublicHost: '', maxConnections: 10 });
  const app = Fastify();
  await app.register(otaRoutes, {
    publicWsUrl: '',
    wsPath: '/xiaozhi/v1/',
    mode: 'open',
    allowedOrigins: [],
    protocolVersion: 1,
    timezoneOffsetMinutes: 0,
    firmware: { version: '', url: '', force: false },
    ownHosts: new OwnHosts({ publicHosts: ['voice.example.org'], publicWsUrl: '' }),
    mqtt: (req) => {
      asked.push({ host: req.host, hostIsOwn: req.hostIsOwn });
      return { endpoint: endpoints.broker(req.deviceId, req.clientId, req.host, 1883, req.hostIsOwn) };
    },
  });
  try {
    const ota = (host: string) =>
      app.inject({
        method: 'POST',
        url: '/xiaozhi/ota/',
        headers: { host, 'device-id': 'aa:bb:cc:dd:ee:02', 'client-id': 'client-2' },
        payload: '{}',
      });
    assert.equal((await ota('voice.example.org:8000')).statusCode, 200);
    assert.equal(endpoints.udpServer('aa:bb:cc:dd:ee:02', 'client-2', '10.0.0.5'), 'voice.example.org');
    // A stranger asks for the same pair naming its own host: it is answered (it learns nothing
    // it did not send), but the device's next hello still names the server's own host.
    const res = await ota('camera-thief.example');
    assert.equal(res.statusCode, 200);
    assert.equal((res.json() as { mqtt: { endpoint: string } }).mqtt.endpoint, 'camera-thief.example:1883');
    assert.equal(endpoints.udpServer('aa:bb:cc:dd:ee:02', 'client-2', '10.0.0.5'), 'voice.example.org');
    assert.deepEqual(asked, [
      { host: 'voice.example.org', hostIsOwn: true },
      { host: 'camera-thief.example', hostIsOwn: false },
    ]);
  } finally {
    await app.close();
  }
});
