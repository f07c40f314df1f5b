/**
 * Reminders on the store, the same cases on SQLite and PostgreSQL: per identity pair and bounded
 * (also under concurrent adds), listed and cancelled by their pair only, claimed by exactly one of two racing claims, released, given back when
 * abandoned, and deleted with a revoke.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_REMINDER_CHARS } from '../../../store/reminders.ts';
import { open, postgresTarget, sqliteTarget } from '../../helpers/store-targets.ts';

const A = 'a0:00:00:00:00:01';
const B = 'a0:00:00:00:00:02';
const T0 = Date.parse('2026-11-27T17:00:00Z');

for (const target of [sqliteTarget(), postgresTarget()]) {
  describe(`reminders on ${target.name}`, () => {
    after(() => target.close());

    test("per device, soonest first, bounded, text cut; a device cannot cancel another's", async () => {
      const store = await open(await target.fresh());
      try {
        const late = await store.reminders.add(
          { deviceId: A.toUpperCase(), clientId: 'c-a', agent: 'home', text: ' later ', dueMs: T0 + 2000 },
          3,
        );
        const soon = await store.reminders.add(
          { deviceId: A, clientId: 'c-a', agent: 'home', text: 'x'.repeat(MAX_REMINDER_CHARS + 50), dueMs: T0 + 1000 },
          3,
        );
        const other = await store.reminders.add(
          { deviceId: B, clientId: 'c-b', agent: null, text: 'for B', dueMs: T0 },
          3,
        );
        assert.ok(typeof late === 'object' && typeof soon === 'object' && typeof other === 'object');
        assert.equal(late.deviceId, A, 'device ids are kept lower case');
        assert.equal(late.text, 'later');
        assert.equal(soon.text.length, MAX_REMINDER_CHARS);
        assert.deepEqual(
          (await store.reminders.list(A)).map((r) => r.id),
          [soon.id, late.id],
        );
        assert.equal(
          (await store.reminders.add({ deviceId: A, clientId: 'c-a', agent: 'home', text: 'third', dueMs: T0 }, 3)) !==
            'full',
          true,
        );
        assert.equal(
          await store.reminders.add({ deviceId: A, clientId: 'c-a', agent: 'home', text: 'fourth', dueMs: T0 }, 3),
          'full',
        );
        assert.equal(await store.reminders.cancel(B, late.id), false);
        assert.equal(await store.reminders.cancel(A, late.id), true);
        assert.equal(await store.reminders.cancel(A, late.id), false);
        assert.equal((await store.reminders.list(A)).length, 2);
        assert.deepEqual(
          (await store.reminders.list(B)).map((r) => r.text),
          ['for B'],
        );
      } finally {
        await store.close();
      }
    });

    test("another Client-Id of the same MAC neither sees nor cancels a pair's reminders, and has a bound of its own", async () => {
      const store = await open(await target.fresh());
      try {
        const mine = await store.reminders.add(
          { deviceId: A, clientId: 'Owner', agent: 'home', text: 'take the pills', dueMs: T0 },
          1,
        );
        assert.ok(typeof mine === 'object');
        assert.equal(mine.clientId, 'owner', 'kept in lower case');
        assert.equal(
          await store.reminders.add({ deviceId: A, clientId: 'owner', agent: 'home', text: 'second', dueMs: T0 }, 1),
          'full',
        );
        const theirs = await store.reminders.add(
          { deviceId: A, clientId: 'stranger', agent: 'home', text: 'theirs', dueMs: T0 },
          1,
        );
        assert.ok(typeof theirs === 'object', "the owner's bound is not the stranger's");
        assert.deepEqual(
          (await store.reminders.list(A, 'stranger')).map((r) => r.text),
          ['theirs'],
        );
        assert.deepEqual(
          (await store.reminders.list(A, 'OWNER')).map((r) => r.text),
          ['take the pills'],
        );
        assert.equal(await store.reminders.cancel(A, mine.id, 'stranger'), false);
        assert.equal((await store.reminders.list(A)).length, 2, "the admin's view: every pair");
        assert.equal(await store.reminders.cancel(A, mine.id, 'owner'), true);
      } finally {
        await store.close();
      }
    });

    test('adds at the same time never pass the bound; the store holds a bounded number in all', async () => {
      const store = await open(await target.fresh());
      try {
        const results = await Promise.all(
          Array.from({ length: 12 }, (_, i) =>
            store.reminders.add({ deviceId: A, clientId: 'c', agent: null, text: `r${i}`, dueMs: T0 + i }, 5),
          ),
        );
        assert.equal(results.filter((r) => r !== 'full').length, 5);
        assert.equal((await store.reminders.list(A)).length, 5);
        // The whole store is bounded too (any MAC may talk in open mode).
        assert.notEqual(
          await store.reminders.add({ deviceId: B, clientId: 'c', agent: null, text: 'b1', dueMs: T0 }, 5, 7),
          'full',
        );
        assert.notEqual(
          await store.reminders.add({ deviceId: B, clientId: 'c', agent: null, text: 'b2', dueMs: T0 }, 5, 7),
          'full',
        );
        assert.equal(
          await store.reminders.add({ deviceId: B, clientId: 'c', agent: null, text: 'b3', dueMs: T0 }, 5, 7),
          'store_full',
        );
      } finally {
        await store.close();
      }
    });

    test('due rows are claimed by one of two racing claims; delivered removes, release retries later, abandoned claims come back', async () => {
      const db = await target.fresh();
      const [one, two] = [await open(db, { replica: 'one' }), await open(db, { replica: 'two' })];
      try {
        const r = await one.reminders.add({ deviceId: A, clientId: 'c', agent: null, text: 'tea', dueMs: T0 }, 10);
        assert.ok(typeof r === 'object');
        assert.deepEqual(await one.reminders.due(T0 - 1, 10), []);
        assert.deepEqual(
          (await two.reminders.due(T0, 10)).map((x) => x.id),
          [r.id],
        );
        const claims = await Promise.all([one.reminders.claim(r.id, 'one', T0), two.reminders.claim(r.id, 'two', T0)]);
        assert.equal(claims.filter(Boolean).length, 1, 'exactly one claim wins');
        const winner = claims[0] ? 'one' : 'two';
        const loser = claims[0] ? 'two' : 'one';
        assert.deepEqual(await one.reminders.due(T0 + 10_000, 10), [], 'a claimed row is not due');
        assert.equal((await one.reminders.list(A))[0]?.state, 'firing');
        // Only the claimant releases it; it is tried again at the time given.
        await one.reminders.release(r.id, loser, T0 + 30_000);
        assert.deepEqual(await one.reminders.due(T0 + 60_000, 10), []);
        await one.reminders.release(r.id, winner, T0 + 30_000);
        assert.deepEqual(await one.reminders.due(T0 + 29_999, 10), []);
        assert.deepEqual(
          (await one.reminders.due(T0 + 30_000, 10)).map((x) => x.dueMs),
          [T0],
          'still due at its own time',
        );
        // A replica that read the row as due before it was put back for later cannot claim it early.
        assert.equal(await two.reminders.claim(r.id, 'two', T0 + 29_999), false, 'not before its next try');
        // A claim whose replica died is given back once old enough.
        assert.ok(await two.reminders.claim(r.id, 'two', T0 + 30_000));
        assert.equal(await one.reminders.releaseAbandoned(T0 + 30_000), 0);
        assert.equal(await one.reminders.releaseAbandoned(T0 + 30_001), 1);
        assert.ok(await one.reminders.claim(r.id, 'one', T0 + 40_000));
        await one.reminders.delivered(r.id, 'two');
        assert.equal((await one.reminders.list(A)).length, 1, 'only the claimant marks it delivered');
        await one.reminders.delivered(r.id, 'one');
        assert.deepEqual(await one.reminders.list(A), []);
      } finally {
        await Promise.all([one.close(), two.close()]);
      }
    });

    test('revoking a device deletes its reminders, and only its', async () => {
      const store = await open(await target.fresh());
      try {
        const code = await store.registry.pendingCode(A, 'c-1', '10.0.0.1');
        assert.ok(code && (await store.registry.bind(code.code, {})).ok);
        await store.reminders.add({ deviceId: A, clientId: 'c-1', agent: null, text: 'a', dueMs: T0 }, 10);
        await store.reminders.add({ deviceId: B, clientId: 'c-2', agent: null, text: 'b', dueMs: T0 }, 10);
        await store.registry.revoke(A);
        assert.deepEqual(await store.reminders.list(A), []);
        assert.equal((await store.reminders.list(B)).length, 1);
      } finally {
        await store.close();
      }
    });
  });
}
