/**
 * A stranger must not hold HTTP sockets with a trickled body, nor open
 * hundreds of sessions or upgrades from one address; `maxSessions` has a non-zero default.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { DeviceSim } from '../../fixtures/device-sim.ts';
import { recordingConversation } from '../../helpers/recording-conversation.ts';
import { startTestApp, type TestApp } from '../../helpers/test-app.ts';
import { ConfigSchema } from '../../../server/config.ts';
import { sleep, waitFor } from '../../helpers/wait.ts';

describe('bounded per server', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({
      createConversation: recordingConversation().factory,
      config: {
        server: {
          httpRequestTimeoutMs: 1500,
          httpHeadersTimeoutMs: 1000,
          maxSessionsPerIp: 3,
          upgradeRate: { perSecond: 1, burst: 8 },
        },
      },
    });
  });
  after(() => t.close());

  test('a slow OTA body (1 byte per 500 ms) is cut off with 408', async () => {
    const sock = connect(t.port, '127.0.0.1');
    let received = '';
    sock.on('data', (d: Buffer) => (received += d.toString()));
    const closed = new Promise<void>((r) => sock.on('close', () => r()));
    sock.write(
      'POST /xiaozhi/ota/ HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{',
    );
    const drip = setInterval(() => sock.writable && sock.write(' '), 500);
    const started = Date.now();
    const outcome = await Promise.race([
      closed.then(() => 'closed'),
      new Promise((r) => setTimeout(() => r('still open'), 20_000)),
    ]);
    clearInterval(drip);
    sock.destroy();
    assert.equal(outcome, 'closed');
    assert.match(received, /^HTTP\/1\.1 408/);
    assert.ok(Date.now() - started < 15_000);
  });

  test('a fourth session from the same address is refused with 429; a closed one frees its slot', async () => {
    const devs = [1, 2, 3].map((i) => new DeviceSim({ url: t.wsUrl, deviceId: `cc:00:00:00:00:0${i}` }));
    try {
      await Promise.all(devs.map((d) => d.hello()));
      const fourth = new DeviceSim({ url: t.wsUrl, deviceId: 'cc:00:00:00:00:04' });
      await assert.rejects(fourth.opened, /HTTP 429/);
      const sessions = t.app.registry.size;
      devs[0]!.close();
      await devs[0]!.closed;
      await waitFor(() => t.app.registry.size < sessions, { what: 'the closed session to free its slot' });
      const again = new DeviceSim({ url: t.wsUrl, deviceId: 'cc:00:00:00:00:05' });
      await again.hello();
      again.close();
    } finally {
      for (const d of devs) d.close();
    }
  });

  test('upgrade attempts over the per-IP rate are refused with 429 before any other check', async () => {
    // The per-address upgrade budget refills in real time on the server: start from a full one.
    await sleep(2000);
    const results = await Promise.all(
      Array.from({ length: 30 }, async (_, i) => {
        const d = new DeviceSim({
          url: t.wsUrl,
          deviceId: `dd:00:00:00:00:${String(i).padStart(2, '0')}`,
          token: 'wrong',
        });
        try {
          await d.opened;
          return 'open';
        } catch (err) {
          return (err as Error).message;
        } finally {
          d.close();
        }
      }),
    );
    assert.ok(results.filter((r) => r === 'HTTP 429').length >= 15, results.join(','));
  });

  test('server.maxSessions defaults to a non-zero budget', () => {
    assert.equal(ConfigSchema.parse({}).server.maxSessions, 1000);
  });
});
