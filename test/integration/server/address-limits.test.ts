/**
 * Per-address limits against the real server on loopback: anonymous upgrades flooding an address
 * do not lock out a device presenting a valid credential (tokens and activation mode), and the
 * address counted is the one `server.trustProxy` allows to be believed: X-Forwarded-For from a
 * trusted proxy (IPv6 by /64, IPv4-mapped as IPv4), never from anyone else.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeviceSim } from '../../fixtures/device-sim.ts';
import { recordingConversation } from '../../helpers/recording-conversation.ts';
import { startTestApp, type TestApp } from '../../helpers/test-app.ts';
import { postTo, upgradeTo } from '../../helpers/http-probe.ts';

/** About one token per 20 s: a budget spent by the flood stays spent for the whole test. */
const SLOW_REFILL = { perSecond: 0.05, burst: 10 };

/** `count` upgrade attempts from this address, `parallel` at a time; the statuses answered. */
async function flood(
  port: number,
  count: number,
  headers: (i: number) => Record<string, string>,
  parallel = 25,
): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < count; i += parallel) {
    const batch = Array.from({ length: Math.min(parallel, count - i) }, (_, j) => upgradeTo(port, headers(i + j)));
    for (const a of await Promise.all(batch)) statuses.push(a.status);
  }
  return statuses;
}

const countOf = (statuses: number[], status: number): number => statuses.filter((s) => s === status).length;

describe('a device with a valid credential connects while its address is flooded with anonymous upgrades', () => {
  test('tokens mode: a static token is not refused by the anonymous budget; a wrong one is', async () => {
    const t = await startTestApp({
      createConversation: recordingConversation().factory,
      config: {
        server: {
          auth: { mode: 'tokens', tokens: ['real-device-token'] },
          upgradeRate: SLOW_REFILL,
          maxSessionsPerIp: 64,
        },
      },
    });
    try {
      const stranger = (i: number): Record<string, string> =>
        i % 2
          ? { 'Device-Id': `ee:00:00:00:${String(i % 100).padStart(2, '0')}:01` }
          : { Authorization: 'Bearer guessed' };
      const first = await flood(t.port, 300, stranger);
      assert.ok(
        countOf(first, 429) >= 280,
        `the anonymous budget is spent: ${countOf(first, 429)} of 300 refused with 429`,
      );
      // The real device connects in the middle of the flood.
      const during = flood(t.port, 100, stranger);
      const dev = new DeviceSim({ url: t.wsUrl, deviceId: 'cc:00:00:00:00:01', token: 'real-device-token' });
      try {
        await dev.hello();
        assert.equal(dev.closeCode, null);
      } finally {
        dev.close();
      }
      assert.ok(countOf(await during, 429) >= 95, 'strangers stay refused (a token refills every 20 s)');
      assert.equal(
        (await upgradeTo(t.port, { Authorization: 'Bearer wrong' })).status,
        429,
        'a wrong credential spends the anonymous budget',
      );
      const refusals = t.logs.find('device refused: upgrade rate per IP');
      assert.ok(
        refusals.length >= 1 && refusals.length < 50,
        `refusals are logged, rate-limited: ${refusals.length} lines`,
      );
    } finally {
      await t.close();
    }
  });

  test('the authenticated budget is its own, and bounded too: one device reconnecting in a loop is refused past it', async () => {
    const t = await startTestApp({
      createConversation: recordingConversation().factory,
      config: {
        server: {
          auth: { mode: 'tokens', tokens: ['real-device-token'] },
          upgradeRate: SLOW_REFILL,
          maxSessionsPerIp: 0,
        },
      },
    });
    try {
      const loop = await flood(
        t.port,
        30,
        () => ({ 'Device-Id': 'cc:00:00:00:00:02', Authorization: 'Bearer real-device-token' }),
        1,
      );
      const accepted = countOf(loop, 101);
      assert.ok(accepted >= 10 && accepted <= 12, `the burst is accepted, then refused: ${loop.join(',')}`);
      assert.equal(countOf(loop, 429), 30 - accepted, loop.join(','));
      // Another device on the same address has a budget of its own, and so do strangers.
      assert.equal(
        (await upgradeTo(t.port, { 'Device-Id': 'cc:00:00:00:00:03', Authorization: 'Bearer real-device-token' }))
          .status,
        101,
      );
      assert.equal((await upgradeTo(t.port, { 'Device-Id': 'cc:00:00:00:00:04' })).status, 401);
    } finally {
      await t.close();
    }
  });

  describe('activation mode', () => {
    let t: TestApp;
    let dir: string;
    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'address-limits-'));
      t = await startTestApp({
        createConversation: recordingConversation().factory,
        config: {
          server: { dataDir: dir, auth: { mode: 'activation' }, upgradeRate: SLOW_REFILL, maxSessionsPerIp: 64 },
        },
      });
    });
    after(async () => {
      await t.close();
      rmSync(dir, { recursive: true, force: true });
    });

    test('a bound device with its token connects after hundreds of anonymous attempts', async () => {
      const pair = { 'Device-Id': 'a0:b1:c2:d3:e4:42', 'Client-Id': '6f1c1d2e-1111-4222-8333-444455550042' };
      const firmware = { 'Content-Type': 'application/json', 'Activation-Version': '1' };
      const code =
        (
          JSON.parse((await postTo(t.port, '/xiaozhi/ota/', { ...firmware, ...pair })).body) as {
            activation?: { code: string };
          }
        ).activation?.code ?? '';
      assert.equal((await t.app.devices?.bind(code))?.ok, true);
      const token =
        (
          JSON.parse((await postTo(t.port, '/xiaozhi/ota/', { ...firmware, ...pair })).body) as {
            websocket: { token?: string };
          }
        ).websocket.token ?? '';
      assert.ok(token.length >= 40);

      const statuses = await flood(t.port, 300, (i) => ({
        'Device-Id': pair['Device-Id'],
        'Client-Id': pair['Client-Id'],
        Authorization: `Bearer forged-${i}`,
      }));
      assert.ok(
        countOf(statuses, 429) >= 280,
        `forged tokens spend the anonymous budget: ${countOf(statuses, 429)} of 300`,
      );
      const dev = new DeviceSim({ url: t.wsUrl, deviceId: pair['Device-Id'], clientId: pair['Client-Id'], token });
      try {
        await dev.hello();
        assert.equal(dev.closeCode, null);
      } finally {
        dev.close();
      }
    });
  });
});

describe('the address counted: X-Forwarded-For from a trusted proxy, IPv6 by prefix', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({
      createConversation: recordingConversation().factory,
      config: {
        server: {
          trustProxy: ['127.0.0.1'],
          auth: { mode: 'tokens', tokens: ['tok'] },
          upgradeRate: { perSecond: 0.01, burst: 2 },
          maxSessionsPerIp: 0,
        },
      },
    });
  });
  after(() => t.close());
  const from = (xff: string): Promise<number> => upgradeTo(t.port, { 'X-Forwarded-For': xff }).then((a) => a.status);

  test('two addresses in one /64 share one budget; another /64 has its own', async () => {
    assert.deepEqual([await from('2001:db8:1:2::1'), await from('2001:db8:1:2::1')], [401, 401]);
    assert.equal(await from('2001:db8:1:2:aaaa:bbbb:cccc:dddd'), 429);
    assert.equal(await from('2001:db8:1:3::1'), 401);
  });

  test('::ffff:198.51.100.3 and 198.51.100.3 share one budget', async () => {
    assert.deepEqual([await from('::ffff:198.51.100.3'), await from('198.51.100.3')], [401, 401]);
    assert.equal(await from('::ffff:198.51.100.3'), 429);
    assert.equal(await from('198.51.100.3'), 429);
  });

  test('the rightmost entry is the client: what the client itself put to the left changes nothing', async () => {
    assert.deepEqual([await from('192.0.2.1, 203.0.113.50'), await from('192.0.2.2, 203.0.113.50')], [401, 401]);
    assert.equal(await from('192.0.2.3, 203.0.113.50'), 429);
  });
});

describe('X-Forwarded-For from a peer that is not a trusted proxy is ignored', () => {
  test('varying the header does not give a new budget', async () => {
    const t = await startTestApp({
      createConversation: recordingConversation().factory,
      config: {
        server: {
          trustProxy: ['10.0.0.0/8'],
          auth: { mode: 'tokens', tokens: ['tok'] },
          upgradeRate: { perSecond: 0.01, burst: 2 },
          maxSessionsPerIp: 0,
        },
      },
    });
    try {
      const statuses = await flood(t.port, 6, (i) => ({ 'X-Forwarded-For': `198.51.100.${i + 1}` }), 1);
      assert.deepEqual(statuses, [401, 401, 429, 429, 429, 429]);
    } finally {
      await t.close();
    }
  });
});

describe('sessions per address count by the same key', () => {
  test('behind a trusted proxy, each client address has its own session budget', async () => {
    const t = await startTestApp({
      createConversation: recordingConversation().factory,
      config: { server: { trustProxy: ['127.0.0.0/8'], maxSessionsPerIp: 1 } },
    });
    const devs: DeviceSim[] = [];
    try {
      const device = (xff: string, n: number): DeviceSim => {
        const d = new DeviceSim({
          url: t.wsUrl,
          deviceId: `cc:00:00:00:01:0${n}`,
          extraHeaders: { 'X-Forwarded-For': xff },
        });
        devs.push(d);
        return d;
      };
      await device('198.51.100.10', 1).hello();
      await device('198.51.100.11', 2).hello();
      await assert.rejects(device('198.51.100.10', 3).opened, /HTTP 429/);
      await assert.rejects(device('::ffff:198.51.100.11', 4).opened, /HTTP 429/);
    } finally {
      for (const d of devs) d.close();
      await t.close();
    }
  });
});

describe('sessions per address and the same-identity replace rule', () => {
  test('at server.maxSessionsPerIp a device replacing its own session is let in (as at server.maxSessions, and as MQTT does); a new identity is refused', async () => {
    const t = await startTestApp({
      createConversation: recordingConversation().factory,
      config: { server: { auth: { mode: 'tokens', tokens: ['tok'] }, maxSessionsPerIp: 1 } },
    });
    const devs: DeviceSim[] = [];
    const device = (deviceId: string, token = 'tok'): DeviceSim => {
      const d = new DeviceSim({ url: t.wsUrl, deviceId, clientId: 'per-ip-replace', token });
      devs.push(d);
      return d;
    };
    try {
      const first = device('cc:00:00:00:02:01');
      await first.hello();
      await assert.rejects(
        device('cc:00:00:00:02:02').opened,
        /HTTP 429/,
        'another device from the address is over the limit',
      );
      // The same pair reconnects before the server noticed its old connection was dead.
      const again = device('cc:00:00:00:02:01');
      await again.hello();
      assert.equal(await first.closed, 4003, 'the old session is replaced');
      assert.equal(again.closeCode, null);
      // A wrong credential claiming the pair gains nothing from the rule: it is refused before auth.
      await assert.rejects(device('cc:00:00:00:02:01', 'wrong').opened, /HTTP 429/);
      assert.equal(t.app.registry.size, 1);
    } finally {
      for (const d of devs) d.close();
      await t.close();
    }
  });
});
