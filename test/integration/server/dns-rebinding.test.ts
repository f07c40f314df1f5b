/**
 * DNS rebinding against the real server on loopback: a page on a name the attacker points at this
 * server is same-origin with itself (Origin and Host both its name), so the Host must be one of the
 * server's own names for any request a browser makes. Refused with 403 and a rate-limited log line
 * naming `server.publicHosts`; the server's own page, listed names and devices (no Origin) pass.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { networkInterfaces } from 'node:os';
import { recordingConversation } from '../../helpers/recording-conversation.ts';
import { startTestApp, type TestApp } from '../../helpers/test-app.ts';
import { postTo, upgradeTo } from '../../helpers/http-probe.ts';
import { sleep } from '../../helpers/wait.ts';

const FIRMWARE = { 'Content-Type': 'application/json', 'Activation-Version': '1' };
const EVIL = { Origin: 'http://evil.example:8000', Host: 'evil.example:8000' };

describe('DNS rebinding', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({
      createConversation: recordingConversation().factory,
      config: { server: { publicHosts: ['voice.example.org'], publicWsUrl: 'wss://ws.example.net/xiaozhi/v1/', allowedOrigins: ['https://console.example.org'] } },
    });
  });
  after(() => t.close());

  test('a rebinding-shaped OTA request is refused with 403 and no CORS grant', async () => {
    const res = await postTo(t.port, '/xiaozhi/ota/', { ...FIRMWARE, ...EVIL, 'Device-Id': 'aa:bb:cc:00:00:01', 'Client-Id': 'c1' });
    assert.equal(res.status, 403);
    assert.equal(res.headers['access-control-allow-origin'], undefined);
    assert.equal(res.body.includes('websocket'), false);
  });

  test('a rebinding-shaped WebSocket upgrade is refused with 403', async () => {
    assert.equal((await upgradeTo(t.port, EVIL, '?device-id=aa:bb:cc:00:00:05')).status, 403);
  });

  test('a forwarded host the page sets itself does not help it', async () => {
    const res = await postTo(t.port, '/xiaozhi/ota/', { ...FIRMWARE, Origin: 'http://evil.example:8000', 'X-Forwarded-Host': 'evil.example:8000' });
    assert.equal(res.status, 403);
    assert.equal((await upgradeTo(t.port, { Origin: 'http://evil.example:8000', 'X-Forwarded-Host': 'evil.example:8000' })).status, 403);
  });

  test('the refusal is logged, rate-limited, naming server.publicHosts', async () => {
    await sleep(1100); // the one-line-per-second budget, spent by the tests above, refills
    const before = t.logs.find('browser request refused: Host is not one of this server\'s names').length;
    for (let i = 0; i < 20; i++) await postTo(t.port, '/xiaozhi/ota/', { ...FIRMWARE, Origin: 'http://evil2.example', Host: 'evil2.example' });
    const lines = t.logs.find('browser request refused: Host is not one of this server\'s names').slice(before);
    assert.ok(lines.length >= 1 && lines.length <= 3, `${lines.length} lines for 20 refusals`);
    assert.equal(lines[0]?.host, 'evil2.example');
    assert.match(String(lines[0]?.fix), /server\.publicHosts/);
  });

  test('the server own page on loopback names and addresses still works', async () => {
    for (const host of [`127.0.0.1:${t.port}`, `localhost:${t.port}`, `[::1]:${t.port}`, `127.0.0.2:${t.port}`]) {
      const res = await postTo(t.port, '/xiaozhi/ota/', { ...FIRMWARE, Host: host, Origin: `http://${host}` });
      assert.equal(res.status, 200, host);
      assert.equal(res.headers['access-control-allow-origin'], `http://${host}`);
    }
    assert.equal((await upgradeTo(t.port, { Origin: `http://127.0.0.1:${t.port}` }, '?device-id=aa:bb:cc:00:00:05')).status, 101);
  });

  test('names in server.publicHosts and the host of server.publicWsUrl are the server own', async () => {
    for (const host of ['voice.example.org', 'Voice.Example.Org:8443', 'ws.example.net']) {
      const res = await postTo(t.port, '/xiaozhi/ota/', { ...FIRMWARE, Host: host, Origin: `https://${host}` });
      assert.equal(res.status, 200, host);
    }
    assert.equal((await upgradeTo(t.port, { Host: 'voice.example.org', Origin: 'https://voice.example.org' })).status, 101);
  });

  test('a listed origin calling through one of the server names still works', async () => {
    const res = await postTo(t.port, '/xiaozhi/ota/', { ...FIRMWARE, Origin: 'https://console.example.org' });
    assert.equal(res.status, 200);
    assert.equal((await postTo(t.port, '/xiaozhi/ota/', { ...FIRMWARE, Origin: 'https://console.example.org', Host: 'evil.example' })).status, 403);
  });

  test('the machine own interface addresses are its names', async (ctx) => {
    const own = Object.values(networkInterfaces())
      .flat()
      .find((i) => i && !i.internal && i.family === 'IPv4');
    if (!own) {
      ctx.diagnostic('no non-loopback IPv4 interface on this machine');
      return;
    }
    const host = `${own.address}:${t.port}`;
    assert.equal((await postTo(t.port, '/xiaozhi/ota/', { ...FIRMWARE, Host: host, Origin: `http://${host}` })).status, 200);
  });

  test('devices send no Origin and are not affected, whatever name they used', async () => {
    const res = await postTo(t.port, '/xiaozhi/ota/', { ...FIRMWARE, Host: 'speaker-server.lan:8000' });
    assert.equal(res.status, 200);
    assert.equal((await upgradeTo(t.port, { Host: 'speaker-server.lan:8000' }, '?device-id=aa:bb:cc:00:00:07')).status, 101);
  });
});
