/**
 * Strangers flooding OTA in activation mode, against the real server on loopback. Requests come
 * from different loopback addresses (127.0.0.2, 127.0.0.3, ...: all of 127/8 reaches the server),
 * so each address has its own budget of pending codes: one address inventing Device-Id/Client-Id
 * pairs replaces its own codes and cannot take the codes real devices elsewhere need, and a
 * thousand hostile requests leave the database bounded and the server able to start again.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { recordingConversation } from '../../helpers/recording-conversation.ts';
import { startTestApp, type TestApp } from '../../helpers/test-app.ts';

interface Answer {
  status: number;
  body: string;
}

function post(port: number, from: string, headers: Record<string, string>, body = '{}'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/xiaozhi/ota/',
        method: 'POST',
        localAddress: from,
        agent: false,
        headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), ...headers },
      },
      (res) => {
        let data = '';
        res.on('data', (c: Buffer) => (data += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: data }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const mac = (prefix: string, i: number): string =>
  `${prefix}:00:00:00:${((i >> 8) & 255).toString(16).padStart(2, '0')}:${(i & 255).toString(16).padStart(2, '0')}`;
const codeOf = (a: Answer): string => (JSON.parse(a.body) as { activation?: { code: string } }).activation?.code ?? '';

/** Runs `n` requests, `width` at a time. */
async function flood(n: number, width: number, one: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < n) await one(next++);
    }),
  );
}

const dirSize = (dir: string): number => readdirSync(dir).reduce((n, f) => n + statSync(join(dir, f)).size, 0);

describe('OTA floods in activation mode', () => {
  let dir: string;
  let t: TestApp;
  const start = (): Promise<TestApp> =>
    startTestApp({
      createConversation: recordingConversation().factory,
      config: { server: { dataDir: dir, auth: { mode: 'activation' } } },
    });
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ota-flood-'));
    t = await start();
  });
  after(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a real device still gets a code after 100 invented pairs arrived from another address, and while more arrive', async () => {
    const real = { 'Device-Id': 'a0:00:00:00:00:01', 'Client-Id': '6f1c1d2e-1111-4222-8333-444455550001' };
    let realAnswer: Answer | undefined;
    const invented: number[] = [];
    await flood(110, 8, async (i) => {
      invented.push(
        (await post(t.port, '127.0.0.2', { 'Device-Id': mac('02', i), 'Client-Id': `invented-${i}` })).status,
      );
      // The real device boots once 100 invented pairs have arrived, while more keep coming.
      if (i === 100) realAnswer = await post(t.port, '127.0.0.3', real);
    });
    assert.equal(realAnswer?.status, 200, realAnswer?.body);
    assert.deepEqual(new Set(invented), new Set([200]), 'the flooding address replaces its own oldest code each time');
    const code = codeOf(realAnswer as Answer);
    assert.match(code, /^\d{6}$/);
    // Its code outlives the flood and binds.
    assert.equal(codeOf(await post(t.port, '127.0.0.3', real)), code);
    assert.equal((await t.app.devices?.bind(code))?.ok, true);
    const { pending } = (await t.app.devices?.list()) ?? { pending: [] };
    assert.equal(
      pending.filter((p) => p.clientId.startsWith('invented-')).length,
      t.config.server.auth.pendingPerAddress,
    );
  });

  test('1,000 hostile OTA requests (invented pairs, oversize fields, junk) leave the database bounded and the server restartable', async () => {
    const huge = 'f'.repeat(125 * 1024);
    const statuses = new Map<number, number>();
    await flood(1000, 8, async (i) => {
      const from = `127.0.1.${(i % 50) + 1}`;
      let res: Answer;
      switch (i % 5) {
        case 0:
          res = await post(t.port, from, {}, JSON.stringify({ mac_address: `${huge}${i}`, uuid: `${huge}${i}` }));
          break;
        case 1:
          res = await post(t.port, from, { 'Device-Id': mac('0a', i), 'Client-Id': 'x'.repeat(150) });
          break;
        case 2:
          res = await post(
            t.port,
            from,
            {},
            JSON.stringify({
              mac_address: mac('0b', i),
              uuid: `u-${i}`,
              board: { type: huge },
              application: { version: huge },
            }),
          );
          break;
        case 3:
          res = await post(t.port, from, { 'Device-Id': mac('0c', i), 'Client-Id': `c-${i}` }, `{"broken": ${huge}`);
          break;
        default:
          res = await post(t.port, from, { 'Device-Id': mac('0d', i), 'Client-Id': `c-${i}` });
      }
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    });
    assert.equal(statuses.get(500) ?? 0, 0, `no server error: ${JSON.stringify([...statuses])}`);
    const list = (await t.app.devices?.list()) ?? { bound: [], pending: [] };
    assert.ok(list.pending.length <= 100, `pending codes bounded: ${list.pending.length}`);
    const records = await t.app.store.devices.list();
    assert.ok(
      records.every((r) => (r.board ?? '').length <= 100 && (r.firmware ?? '').length <= 100),
      'labels stored bounded',
    );
    assert.ok(dirSize(dir) < 16 * 1024 * 1024, `the data directory stays small: ${dirSize(dir)} bytes`);

    await t.close();
    t = await start();
    const fresh = await post(t.port, '127.0.0.9', { 'Device-Id': 'a0:00:00:00:00:09', 'Client-Id': 'after-restart' });
    assert.equal(fresh.status, 200, fresh.body);
    assert.match(codeOf(fresh), /^\d{6}$/);
    assert.ok(
      t.app.devices?.isBound('a0:00:00:00:00:01', '6f1c1d2e-1111-4222-8333-444455550001'),
      'the binding made before survives the restart',
    );
  });
});

describe('pending codes across many addresses (a fleet behind carrier NAT)', () => {
  test('34 addresses × 3 pending codes fill the store; a new device from a new address still gets a code, also after a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ota-addresses-'));
    const start = (): Promise<TestApp> =>
      startTestApp({
        createConversation: recordingConversation().factory,
        config: { server: { dataDir: dir, auth: { mode: 'activation' } } },
      });
    let t = await start();
    try {
      const lone = { 'Device-Id': 'a0:00:00:00:01:01', 'Client-Id': 'lone-device' };
      const loneCode = codeOf(await post(t.port, '127.0.3.1', lone));
      assert.match(loneCode, /^\d{6}$/);
      const statuses: number[] = [];
      await flood(34 * 3, 4, async (i) => {
        const address = `127.0.2.${Math.floor(i / 3) + 1}`;
        statuses.push((await post(t.port, address, { 'Device-Id': mac('0e', i), 'Client-Id': `fleet-${i}` })).status);
      });
      assert.deepEqual(new Set(statuses), new Set([200]), 'every fleet device got a code');
      const fresh = await post(t.port, '127.0.4.1', { 'Device-Id': 'a0:00:00:00:04:01', 'Client-Id': 'new-device' });
      assert.equal(fresh.status, 200, fresh.body);
      assert.match(codeOf(fresh), /^\d{6}$/);
      const { pending } = (await t.app.devices?.list()) ?? { pending: [] };
      assert.ok(pending.length <= 100, `bounded: ${pending.length}`);
      assert.ok(
        pending.some((p) => p.code === loneCode),
        'the lone device keeps its code: the busiest addresses gave theirs',
      );

      await t.close();
      t = await start();
      const afterRestart = await post(t.port, '127.0.4.2', {
        'Device-Id': 'a0:00:00:00:04:02',
        'Client-Id': 'after-restart',
      });
      assert.equal(afterRestart.status, 200, afterRestart.body);
      assert.match(codeOf(afterRestart), /^\d{6}$/);
      assert.equal((await t.app.devices?.bind(loneCode))?.ok, true, 'and the lone device binds');
    } finally {
      await t.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
