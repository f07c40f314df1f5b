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
      config: {
        server: {
          publicHosts: ['voice.example.org'],
          publicWsUrl: 'wss://ws.example.net/xiaozhi/v1/',
          allowedOrigins: ['https://console.example.org'],
        },
      },
    });
  });
  after(() => t.close());

  test('a rebinding-shaped OTA request is refused with 403 and no CORS grant', async () => {
    const res = await postTo(t.port, '/xiaozhi/ota/', {
      ...FIRMWARE,
      ...EVIL,
      'Device-Id': 'aa:bb:cc:00:00:01',
      'Client-Id': 'c1',
    });
    assert.equal(res.status, 403);
    assert.equal(res.headers['access-control-allow-origin'], undefined);
    assert.equal(res.body.includes('websocket'), false);
  });

  test('a rebinding-shaped WebSocket upgrade is refused with 403', async () => {
    assert.equal((await upgradeTo(t.port, EVIL, '?device-id=aa:bb:cc:00:00:05')).status, 403);
  });

  test('a forwarded host the page sets itself does not help it', async () => {
    const res = await postTo(t.port, '/xiaozhi/ota/', {
      ...FIRMWARE,
      Origin: 'http://evil.example:8000',
      'X-Forwarded-Host': 'evil.example:8000',
    });
    assert.equal(res.status, 403);
    assert.equal(
      (await upgradeTo(t.port, { Origin: 'http://evil.example:8000', 'X-Forwarded-Host': 'evil.example:8000' })).status,
      403,
    );
  });

  test('the refusal is logged, rate-limited, naming server.publicHosts', async () => {
    await sleep(1100); // the one-line-per-second budget, spent by the tests above, refills
    const before = t.logs.find("browser request refused: Host is not one of this server's names").length;
    for (let i = 0; i < 20; i++)
      await postTo(t.port, '/xiaozhi/ota/', { ...FIRMWARE, Origin: 'http://evil2.example', Host: 'evil2.example' });
    const lines = t.logs.find("browser request refused: Host is not one of this server's names").slice(before);
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
    assert.equal(
      (await upgradeTo(t.port, { Origin: `http://127.0.0.1:${t.port}` }, '?device-id=aa:bb:cc:00:00:05')).status,
      101,
    );
  });

  test('names in server.publicHosts and the host of server.publicWsUrl are the server own', async () => {
    for (const host of ['voice.example.org', 'Voice.Example.Org:8443', 'ws.example.net']) {
      const res = await postTo(t.port, '/xiaozhi/ota/', { ...FIRMWARE, Host: host, Origin: `https://${host}` });
      assert.equal(res.status, 200, host);
    }
    assert.equal(
      (await upgradeTo(t.port, { Host: 'voice.example.org', Origin: 'https://voice.example.org' })).status,
      101,
    );
  });

  test('a listed origin calling through one of the server names still works', async () => {
    const res = await postTo(t.port, '/xiaozhi/ota/', { ...FIRMWARE, Origin: 'https://console.example.org' });
    assert.equal(res.status, 200);
    assert.equal(
      (
        await postTo(t.port, '/xiaozhi/ota/', {
          ...FIRMWARE,
          Origin: 'https://console.example.org',
          Host: 'evil.example',
        })
      ).status,
      403,
    );
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
    assert.equal(
      (await postTo(t.port, '/xiaozhi/ota/', { ...FIRMWARE, Host: host, Origin: `http://${host}` })).status,
      200,
    );
  });

  test('devices send no Origin and are not affected, whatever name they used', async () => {
    const res = await postTo(t.port, '/xiaozhi/ota/', { ...FIRMWARE, Host: 'speaker-server.lan:8000' });
    assert.equal(res.status, 200);
    assert.equal(
      (await upgradeTo(t.port, { Host: 'speaker-server.lan:8000' }, '?device-id=aa:bb:cc:00:00:07')).status,
      101,
    );
  });
});

const ORIGIN_REFUSED = "browser request refused: Origin is not this server's page nor one of server.allowedOrigins";

describe('refusals by Origin', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({
      createConversation: recordingConversation().factory,
      config: { admin: { token: 'admin-token-for-origin-tests-0123' } },
    });
  });
  after(() => t.close());
  const own = (): string => `127.0.0.1:${t.port}`;

  test('a page elsewhere: 403, and a warning and an answer that name server.allowedOrigins with its origin', async () => {
    const before = t.logs.find(ORIGIN_REFUSED).length;
    const res = await postTo(t.port, '/xiaozhi/ota/', { ...FIRMWARE, Origin: 'https://voice-ui.example', Host: own() });
    assert.equal(res.status, 403);
    assert.equal(res.headers['access-control-allow-origin'], undefined, 'still no CORS grant');
    const body = JSON.parse(res.body) as { error: string; fix?: string };
    assert.equal(body.error, 'origin not allowed');
    assert.match(body.fix ?? '', /server\.allowedOrigins/);
    assert.ok(body.fix?.includes('https://voice-ui.example'), body.fix);
    const line = t.logs.find(ORIGIN_REFUSED).slice(before)[0];
    assert.ok(line, 'logged');
    assert.equal(line.level, 40, 'a warning');
    assert.equal(line.origin, 'https://voice-ui.example');
    assert.equal(line.where, 'OTA');
    assert.match(String(line.fix), /server\.allowedOrigins/);
  });

  test('the server own page behind a proxy that dropped the port from Host: the fix names the proxy setting', async () => {
    await sleep(1100); // each refusal kind logs one line a second
    const before = t.logs.find(ORIGIN_REFUSED).length;
    const res = await postTo(t.port, '/xiaozhi/ota/', {
      ...FIRMWARE,
      Origin: 'http://localhost:8080',
      Host: 'localhost',
    });
    assert.equal(res.status, 403);
    const fix = (JSON.parse(res.body) as { fix?: string }).fix ?? '';
    assert.match(fix, /\$http_host/, fix);
    assert.match(String(t.logs.find(ORIGIN_REFUSED).slice(before)[0]?.fix), /\$http_host/);
  });

  test('the WebSocket and the admin API say so too; the admin API names what applies to it', async () => {
    await sleep(1100);
    const before = t.logs.find(ORIGIN_REFUSED).length;
    assert.equal((await upgradeTo(t.port, { Origin: 'https://voice-ui.example', Host: own() })).status, 403);
    const admin = await fetch(`${t.httpUrl}/api/admin/session`, {
      headers: { origin: 'https://console-elsewhere.example' },
    });
    assert.equal(admin.status, 403);
    const fix = ((await admin.json()) as { fix?: string }).fix ?? '';
    assert.doesNotMatch(fix, /add .* to server\.allowedOrigins/, 'allowedOrigins does not open the admin API');
    assert.match(fix, /console/);
    const lines = t.logs.find(ORIGIN_REFUSED).slice(before);
    assert.deepEqual(lines.map((l) => l.where).sort(), ['WebSocket', 'admin API']);
  });

  test('rate-limited: 30 refusals in a burst log a few lines, the next one counts the rest', async () => {
    await sleep(1100);
    const before = t.logs.find(ORIGIN_REFUSED).length;
    for (let i = 0; i < 30; i++)
      assert.equal(
        (await postTo(t.port, '/xiaozhi/ota/', { ...FIRMWARE, Origin: `https://page-${i}.example`, Host: own() }))
          .status,
        403,
      );
    const burst = t.logs.find(ORIGIN_REFUSED).slice(before);
    assert.ok(burst.length >= 1 && burst.length <= 3, `${burst.length} lines for 30 refusals`);
    await sleep(1100);
    await postTo(t.port, '/xiaozhi/ota/', { ...FIRMWARE, Origin: 'https://one-more.example', Host: own() });
    const next = t.logs.find(ORIGIN_REFUSED).slice(before + burst.length);
    assert.equal(next.length, 1);
    assert.ok(
      Number(next[0]?.suppressed) >= 27,
      `the next line counts the refusals left out: ${String(next[0]?.suppressed)}`,
    );
  });
});
