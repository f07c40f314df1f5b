/**
 * Behind xinnan's MQTT gateway every device's WebSocket comes from the gateway's one address.
 * The gateway sends, per device, exactly these headers: `device-id` (the MAC), `client-id`,
 * `protocol-version: 2`, `authorization: Bearer test-token` (or its own signed token) and
 * `x-forwarded-for: <the address the device connected to it from>`, then a version 2 hello.
 * With the gateway's address in `server.trustProxy` the per-address limits count each device's
 * own address; without it the whole fleet shares one budget.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DeviceSim } from '../../fixtures/device-sim.ts';
import { recordingConversation } from '../../helpers/recording-conversation.ts';
import { startTestApp, type TestApp } from '../../helpers/test-app.ts';
import { upgradeTo } from '../../helpers/http-probe.ts';

const FLEET = 100;
const PER_IP = 4;

/** The n-th device behind the gateway: its MAC, Client-Id and the address it reached the gateway from. */
function device(n: number): { mac: string; clientId: string; ip: string } {
  const hex = n.toString(16).padStart(4, '0');
  return {
    mac: `a0:85:e3:f4:${hex.slice(0, 2)}:${hex.slice(2)}`,
    clientId: `6f1c1d2e-1111-4222-8333-44445555${hex}`,
    ip: `198.51.${100 + Math.floor(n / 250)}.${(n % 250) + 1}`,
  };
}

/** The headers the gateway's WebSocket bridge sends for a device (its spelling: lower case). */
function gatewayHeaders(n: number): Record<string, string> {
  const d = device(n);
  return { 'device-id': d.mac, 'client-id': d.clientId, authorization: 'Bearer test-token', 'x-forwarded-for': d.ip };
}

/** One gateway session: the bridge's WebSocket (protocol version 2 from its headers). */
function gatewaySession(t: TestApp, n: number): DeviceSim {
  return new DeviceSim({ url: t.wsUrl, protocolVersion: 2, extraHeaders: gatewayHeaders(n) });
}

/** Opens the fleet `parallel` at a time; which sessions said hello and which upgrades were refused (and how). */
async function openFleet(t: TestApp, parallel = 10): Promise<{ sessions: DeviceSim[]; refused: string[] }> {
  const sessions: DeviceSim[] = [];
  const refused: string[] = [];
  for (let i = 0; i < FLEET; i += parallel) {
    const batch = Array.from({ length: Math.min(parallel, FLEET - i) }, (_, j) => gatewaySession(t, i + j));
    await Promise.all(
      batch.map(async (s) => {
        try {
          await s.opened;
        } catch (err) {
          refused.push((err as Error).message);
          return;
        }
        sessions.push(s);
        await s.hello();
      }),
    );
  }
  return { sessions, refused };
}

describe('a fleet behind the MQTT gateway', () => {
  test(`with the gateway in server.trustProxy, ${FLEET} devices connect through it although maxSessionsPerIp is ${PER_IP}`, async () => {
    const t = await startTestApp({
      createConversation: recordingConversation().factory,
      config: {
        server: { trustProxy: ['127.0.0.1'], maxSessionsPerIp: PER_IP, upgradeRate: { perSecond: 5, burst: 20 } },
      },
    });
    let fleet: DeviceSim[] = [];
    try {
      const { sessions, refused } = await openFleet(t);
      fleet = sessions;
      assert.deepEqual(refused, []);
      assert.equal(sessions.length, FLEET);
      assert.ok(sessions.every((s) => s.sessionId !== '' && s.closeCode === null));
      // Each session is the device's own: its pair, and the address it reached the gateway from.
      const connected = t.logs.find('device connected');
      assert.equal(connected.length, FLEET);
      assert.deepEqual(
        new Set(connected.map((l) => l.remote)),
        new Set(Array.from({ length: FLEET }, (_, n) => device(n).ip)),
      );
      assert.equal(new Set(connected.map((l) => l.deviceId)).size, FLEET);
      // The limit still holds per device address: a fifth session forwarded for one device is refused.
      const outcomes: string[] = [];
      for (let i = 0; i < PER_IP; i++) {
        const s = new DeviceSim({
          url: t.wsUrl,
          protocolVersion: 2,
          extraHeaders: { ...gatewayHeaders(0), 'client-id': `another-app-${i}` },
        });
        fleet.push(s);
        outcomes.push(
          await s.opened.then(
            () => 'open',
            (err: Error) => err.message,
          ),
        );
      }
      assert.deepEqual(
        outcomes,
        [...Array<string>(PER_IP - 1).fill('open'), 'HTTP 429'],
        'device 0 already holds one of its budget',
      );
    } finally {
      for (const s of fleet) s.close();
      await t.close();
    }
  });

  test(`without it the gateway's address is one client: ${PER_IP} sessions, the rest refused with 429`, async () => {
    const t = await startTestApp({
      createConversation: recordingConversation().factory,
      config: { server: { maxSessionsPerIp: PER_IP, upgradeRate: { perSecond: 5, burst: 20 } } },
    });
    let fleet: DeviceSim[] = [];
    try {
      const { sessions, refused } = await openFleet(t, 1);
      fleet = sessions;
      assert.equal(sessions.length, PER_IP);
      assert.equal(refused.length, FLEET - PER_IP);
      assert.ok(
        refused.every((r) => r === 'HTTP 429'),
        refused.join(','),
      );
      assert.ok(t.logs.find('device connected').every((l) => l.remote === '127.0.0.1'));
    } finally {
      for (const s of fleet) s.close();
      await t.close();
    }
  });

  test("the upgrade rate is per forwarded device address: one device reconnecting in a loop does not spend the others' budget", async () => {
    const t = await startTestApp({
      createConversation: recordingConversation().factory,
      config: {
        server: { trustProxy: ['127.0.0.1'], maxSessionsPerIp: 0, upgradeRate: { perSecond: 0.05, burst: 3 } },
      },
    });
    try {
      const loop: number[] = [];
      for (let i = 0; i < 8; i++) loop.push((await upgradeTo(t.port, gatewayHeaders(7))).status);
      assert.deepEqual(loop, [101, 101, 101, 429, 429, 429, 429, 429]);
      const others: number[] = [];
      for (let n = 8; n < 20; n++) others.push((await upgradeTo(t.port, gatewayHeaders(n))).status);
      assert.deepEqual(others, Array<number>(12).fill(101));
    } finally {
      await t.close();
    }
  });
});
