/**
 * The device registry on the store, the same cases on SQLite and a real PostgreSQL: codes per pair,
 * bounded sizes, a budget per source address (a flood from one address replaces its own codes and
 * leaves room for everyone else), a generation per binding so a revoked token never works again.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_PENDING } from '../../../store/identity-registry.ts';
import { deviceToken, verifyBinding } from '../../../features/identity/device-token.ts';
import { open, postgresTarget, sqliteTarget } from '../../helpers/store-targets.ts';

/** A distinct well-formed MAC for each number. */
const mac = (prefix: string, i: number): string =>
  `${prefix}:00:00:00:${(i >> 8).toString(16).padStart(2, '0')}:${(i & 255).toString(16).padStart(2, '0')}`;

for (const target of [sqliteTarget(), postgresTarget()]) {
  describe(`device registry on ${target.name}`, () => {
    after(() => target.close());

    test("a pair keeps its code until bound; bound, it has a binding with the code's generation; the secret is kept", async () => {
      const db = await target.fresh();
      const store = await open(db);
      try {
        const reg = store.registry;
        const first = await reg.pendingCode('A0:B1:C2:D3:E4:F5', 'Client-1', '10.0.0.1');
        assert.ok(first?.created);
        assert.equal(first.deviceId, 'a0:b1:c2:d3:e4:f5', 'stored normalised');
        const again = await reg.pendingCode('a0:b1:c2:d3:e4:f5', 'client-1', '10.0.0.1');
        assert.deepEqual({ ...again, created: true }, first);
        assert.equal(again?.created, false);
        assert.equal(reg.isBound('a0:b1:c2:d3:e4:f5', 'client-1'), false);
        const bound = await reg.bind(` ${first.code} `);
        assert.ok(bound.ok);
        assert.equal(bound.device.generation, first.generation);
        assert.ok(reg.isBound('A0:B1:C2:D3:E4:F5', 'CLIENT-1'), 'the cache knows at once');
        assert.deepEqual(
          (await reg.list()).bound.map((d) => d.id),
          [bound.device.id],
        );
        assert.equal((await reg.list()).pending.length, 0);
        assert.deepEqual(await reg.bind(first.code), { ok: false, reason: 'unknown or expired code' });
        const secret = reg.secret();
        await store.close();
        const reopened = await open(db);
        try {
          assert.equal(reopened.registry.secret(), secret, 'the generated secret survives a restart');
          assert.ok(reopened.registry.isBound('a0:b1:c2:d3:e4:f5', 'client-1'));
        } finally {
          await reopened.close();
        }
      } finally {
        await store.close();
      }
    });

    test('each binding of a pair has a new generation: a revoked token never works again; malformed pairs are never stored', async () => {
      const store = await open(await target.fresh());
      try {
        const reg = store.registry;
        const pair = ['a0:b1:c2:d3:e4:77', '6f1c1d2e-1111-4222-8333-444455550077'] as const;
        const tokens: string[] = [];
        for (let i = 0; i < 3; i++) {
          const code = await reg.pendingCode(...pair, '10.0.0.1');
          assert.ok(code);
          const bound = await reg.bind(code.code);
          assert.ok(bound.ok);
          const token = deviceToken(reg.secret(), ...pair, bound.device.generation);
          assert.ok(verifyBinding(reg, ...pair, token));
          for (const old of tokens)
            assert.equal(verifyBinding(reg, ...pair, old), false, "an earlier binding's token opens nothing");
          tokens.push(token);
          assert.equal((await reg.revoke(pair[0])).length, 1);
          assert.equal(verifyBinding(reg, ...pair, token), false);
        }
        assert.equal(new Set(tokens).size, 3);
        assert.equal(await reg.pendingCode('not-a-mac', 'c-1', '10.0.0.1'), null);
        assert.equal(await reg.pendingCode('a0:b1:c2:d3:e4:01', 'x'.repeat(37), '10.0.0.1'), null);
        assert.deepEqual(await reg.revoke('nothing-like-this'), []);
      } finally {
        await store.close();
      }
    });

    test('one address inventing 100 pairs holds only its budget; a real device from another address still gets a code', async () => {
      const store = await open(await target.fresh(), { pendingPerSource: 3 });
      try {
        const reg = store.registry;
        for (let i = 0; i < 100; i++)
          assert.ok(
            await reg.pendingCode(mac('02', i), `stranger-${i}`, '203.0.113.9'),
            `stranger ${i} gets a code (replacing its own oldest)`,
          );
        const { pending } = await reg.list();
        assert.equal(pending.length, 3, 'the flooding address holds its budget only');
        assert.deepEqual(pending.map((p) => p.clientId).sort(), ['stranger-97', 'stranger-98', 'stranger-99']);
        const real = await reg.pendingCode('a0:00:00:00:00:01', 'real-device', '198.51.100.7');
        assert.ok(real?.created, 'the real device gets its code');
        // The flood goes on: the real device's code stays.
        for (let i = 100; i < 110; i++) await reg.pendingCode(mac('02', i), `stranger-${i}`, '203.0.113.9');
        assert.equal((await reg.pendingCode('a0:00:00:00:00:01', 'real-device', '198.51.100.7'))?.code, real.code);
        assert.ok((await reg.bind(real.code)).ok);
      } finally {
        await store.close();
      }
    });

    test("full: a new address still gets a code; the oldest code of the busiest address makes room, not a lone device's", async () => {
      let now = 1_000_000;
      const store = await open(await target.fresh(), { pendingPerSource: 3, codeTtlMs: 600_000, now: () => now });
      try {
        const reg = store.registry;
        // A lone device first (the oldest code of all), then 33 addresses with 3 codes each: full.
        const lone = await reg.pendingCode('0a:00:00:00:00:01', 'lone', '10.1.1.1');
        assert.ok(lone?.created);
        for (let a = 0; a < 33; a++) {
          for (let k = 0; k < 3; k++) {
            now += 10;
            assert.ok(
              await reg.pendingCode(mac('02', a * 3 + k), `busy-${a}-${k}`, `10.0.${a}.1`),
              `address ${a} code ${k}`,
            );
          }
        }
        assert.equal((await reg.list()).pending.length, MAX_PENDING);
        // New devices from new addresses: each gets a code; the busiest addresses' oldest go first.
        for (let i = 0; i < 40; i++) {
          now += 10;
          const fresh = await reg.pendingCode(mac('03', i), `newcomer-${i}`, `10.9.${i}.1`);
          assert.ok(fresh?.created, `newcomer ${i} gets a code in a full store`);
        }
        const { pending } = await reg.list();
        assert.equal(pending.length, MAX_PENDING, 'still bounded');
        assert.ok(
          pending.some((p) => p.code === lone.code),
          'the lone device keeps its code while others hold more',
        );
        const perAddress = new Map<string, number>();
        for (const p of pending.filter((x) => x.clientId.startsWith('busy-'))) {
          const a = p.clientId.split('-')[1] as string;
          perAddress.set(a, (perAddress.get(a) ?? 0) + 1);
        }
        // 40 codes taken from the 33 busy addresses, evenly: each lost its oldest, 7 lost their second.
        assert.deepEqual([...perAddress.values()].sort(), [...Array(26).fill(2), ...Array(7).fill(1)].sort());
        assert.equal(
          pending.filter((x) => x.clientId.startsWith('busy-') && x.clientId.endsWith('-0')).length,
          0,
          'each busy address lost its oldest first',
        );
        assert.ok((await reg.bind(lone.code)).ok);
      } finally {
        await store.close();
      }
    });

    test('full of one code per address: a new device still gets a code, the oldest one making room', async () => {
      let now = 1_000_000;
      const store = await open(await target.fresh(), { pendingPerSource: 3, codeTtlMs: 600_000, now: () => now });
      try {
        const reg = store.registry;
        const codes: string[] = [];
        for (let i = 0; i < MAX_PENDING; i++) {
          now += 10;
          codes.push((await reg.pendingCode(mac('02', i), `client-${i}`, `10.0.${i}.1`))?.code ?? '');
        }
        const fresh = await reg.pendingCode('03:00:00:00:00:01', 'newcomer', '10.9.9.9');
        assert.ok(fresh?.created);
        const left = new Set((await reg.list()).pending.map((p) => p.code));
        assert.equal(left.size, MAX_PENDING);
        assert.equal(left.has(codes[0] as string), false, 'the oldest code went');
        assert.ok(codes.slice(1).every((c) => left.has(c)));
      } finally {
        await store.close();
      }
    });

    test('under pressure (more than half the codes pending) codes expire sooner: a fifth of the lifetime, at least a minute', async () => {
      let now = 1_000_000;
      const ttl = 600_000;
      const store = await open(await target.fresh(), { pendingPerSource: 3, codeTtlMs: ttl, now: () => now });
      try {
        const reg = store.registry;
        const calm = await reg.pendingCode('0a:00:00:00:00:01', 'calm', '10.1.1.1');
        assert.equal(calm?.expiresAt, now + ttl, 'a code issued in a calm store lives the whole codeTtl');
        for (let i = 1; i < MAX_PENDING / 2; i++) await reg.pendingCode(mac('02', i), `client-${i}`, `10.0.${i}.1`);
        now += 1_000;
        const pressed = await reg.pendingCode('03:00:00:00:00:01', 'pressed', '10.9.9.9');
        assert.equal(pressed?.expiresAt, now + ttl / 5, 'issued under pressure: a fifth');
        const calmNow = (await reg.list()).pending.find((p) => p.clientId === 'calm');
        assert.equal(
          calmNow?.expiresAt,
          1_000_000 + ttl / 5,
          'the codes already pending are cut to a fifth of their lifetime too',
        );
        now = 1_000_000 + ttl / 5 + 1;
        assert.deepEqual(await reg.bind(calm?.code ?? ''), { ok: false, reason: 'unknown or expired code' });
        const again = await reg.pendingCode('0a:00:00:00:00:01', 'calm', '10.1.1.1');
        assert.ok(again?.created, 'asking again gets a new code');
        assert.equal(again.expiresAt, now + ttl, 'the expired codes went: the store is calm again');
      } finally {
        await store.close();
      }
    });
  });
}
