/**
 * The push messages on SQLite and PostgreSQL: the offline queue (per identity pair, bounded, expiring) and
 * the hand-over between replicas (claimed exactly once, the outcome written back and announced on
 * the change feed, a cancel that loses to a claim).
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { open, postgresTarget, sqliteTarget } from '../../helpers/store-targets.ts';
import type { StoreChange } from '../../../store/types.ts';

const MAC = 'ab:00:00:00:00:01';

for (const target of [sqliteTarget(), postgresTarget()]) {
  describe(`push messages on ${target.name}`, () => {
    after(() => target.close());

    test('queued per identity pair (the oldest dropped past the bound), claimed once by that pair only, oldest first, expired ones never delivered', async () => {
      let now = 1_000_000;
      const store = await open(await target.fresh(), { now: () => now });
      try {
        const pm = store.pushMessages;
        const changes: StoreChange[] = [];
        store.onChange((c) => changes.push(c));
        const add = (id: string, expiresMs: number, clientId: string | null = 'client-a') =>
          pm.add({ id, deviceId: MAC, clientId, text: `text ${id}`, interrupt: false, source: 'admin', expiresMs }, 3);
        await add('m1', now + 10_000);
        now += 1;
        await add('m2', now + 10_000, 'Client-B');
        now += 1;
        await add('m3', now + 10_000);
        now += 1;
        await add('m4', now + 10_000);
        now += 1;
        assert.deepEqual(
          await add('m5', now + 10_000),
          { expired: 0, dropped: 1 },
          "past 3 waiting for client-a, its oldest goes (client-b's does not count)",
        );
        assert.equal(await pm.get('m1'), undefined);
        assert.equal((await pm.get('m2'))?.clientId, 'client-b', 'the Client-Id kept in lower case');
        assert.deepEqual(
          changes.filter((c) => c.kind === 'push').map((c) => (c.kind === 'push' ? c.id : '')),
          ['m1', 'm2', 'm3', 'm4', 'm5'],
        );

        // Another Client-Id of the MAC (a stranger in open mode) gets none of them.
        assert.deepEqual(await pm.claimFor(MAC, 'client-c', 'R1'), []);
        assert.deepEqual(await pm.claimFor(MAC, null, 'R1'), [], 'nor a session without a Client-Id');
        const forA = await pm.claimFor(MAC, 'CLIENT-A', 'R1');
        assert.deepEqual(
          forA.map((m) => [m.id, m.text, m.state, m.claimedBy]),
          [
            ['m3', 'text m3', 'claimed', 'R1'],
            ['m4', 'text m4', 'claimed', 'R1'],
            ['m5', 'text m5', 'claimed', 'R1'],
          ],
        );
        const [x, y] = await Promise.all([pm.claim('m2', 'R1'), pm.claim('m2', 'R2')]);
        assert.equal([x, y].filter(Boolean).length, 1, 'claimed once');
        assert.equal(await pm.cancel('m2'), false, 'a claimed message cannot be cancelled');
        await pm.finish('m2', 'spoken');
        assert.equal((await pm.get('m2'))?.state, 'spoken');
        await pm.release('m3');
        assert.equal((await pm.get('m3'))?.state, 'pending', 'released back to the queue');
        assert.deepEqual(
          (await pm.pending(10)).map((m) => [m.id, m.clientId]),
          [['m3', 'client-a']],
        );

        now += 20_000;
        assert.deepEqual(await pm.claimFor(MAC, 'client-a', 'R1'), [], 'expired: not delivered');
        assert.deepEqual(
          await pm.add(
            {
              id: 'm6',
              deviceId: MAC,
              clientId: null,
              text: 't',
              interrupt: true,
              source: 'reminder',
              expiresMs: now + 1000,
            },
            3,
          ),
          { expired: 1, dropped: 0 },
        );
        assert.deepEqual(
          await pm.claimFor(MAC, 'client-a', 'R1'),
          [],
          "a message for a session without a Client-Id is not any pair's",
        );
        assert.equal(await pm.cancel('m6'), true);
        assert.equal((await pm.get('m6'))?.state, 'cancelled');
        assert.equal(await pm.othersAlive('test'), false);
      } finally {
        await store.close();
      }
    });

    test('messages claimed by a replica that stopped heart-beating are given back; live claims and finished ones stay', async () => {
      const now = 2_000_000;
      const store = await open(await target.fresh(), { now: () => now });
      try {
        const pm = store.pushMessages;
        const add = (id: string) =>
          pm.add(
            {
              id,
              deviceId: MAC,
              clientId: null,
              text: `text ${id}`,
              interrupt: false,
              source: 'admin',
              expiresMs: now + 60_000,
            },
            10,
          );
        for (const id of ['o1', 'o2', 'o3', 'o4']) await add(id);
        assert.ok(await pm.claim('o1', 'R-dead'));
        assert.ok(await pm.claim('o2', store.replica));
        assert.ok(await pm.claim('o3', 'R-dead'));
        await pm.finish('o3', 'spoken');
        assert.ok(await pm.claim('o4', 'R-asking'));
        // R-asking is not heart-beating either, but its own claims are never given back by itself.
        assert.equal(await pm.releaseOrphaned('R-asking'), 1);
        assert.deepEqual(await Promise.all(['o1', 'o2', 'o3', 'o4'].map(async (id) => (await pm.get(id))?.state)), [
          'pending',
          'claimed',
          'spoken',
          'claimed',
        ]);
        assert.equal(await pm.releaseOrphaned(store.replica), 1, 'o4, claimed by a replica without a heartbeat');
        assert.equal((await pm.get('o1'))?.claimedBy, null);
      } finally {
        await store.close();
      }
    });
  });
}
