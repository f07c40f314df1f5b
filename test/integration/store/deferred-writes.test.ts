/**
 * The hot path's writes (a device seen, live sessions) are queued and stored by the store's one
 * batch per tick, the same cases on SQLite and PostgreSQL: a burst of hellos runs no statement
 * until the tick and then one transaction; a device seen many times is written once; rows land
 * without anyone asking; a clean stop stores what is queued.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { open, postgresTarget, raw, sqliteTarget } from '../../helpers/store-targets.ts';
import { waitFor } from '../../helpers/wait.ts';

/** Every statement either driver runs, by its SQL text (the drivers wrapped for the whole file). */
const statements: string[] = [];
const probe = new BetterSqlite3(':memory:');
// Statements are prepared once and run many times (store/statement-cache.ts): runs are counted.
const statementProto = Object.getPrototypeOf(probe.prepare('select 1')) as Record<
  'run' | 'all' | 'get',
  (...a: unknown[]) => unknown
>;
probe.close();
const sqliteRuns = { run: statementProto.run, all: statementProto.all, get: statementProto.get };
const pgQuery = pg.Client.prototype.query;

function hotPathStatements(): string[] {
  return statements.filter((s) => /"?(devices|live_sessions)"?\b/i.test(s) && !/^\s*select/i.test(s));
}
const transactions = (): number => statements.filter((s) => /^\s*begin/i.test(s)).length;

const mac = (i: number): string =>
  `a0:00:00:00:${String(Math.floor(i / 100)).padStart(2, '0')}:${String(i % 100).padStart(2, '0')}`;

before(() => {
  for (const name of ['run', 'all', 'get'] as const) {
    const original = sqliteRuns[name];
    statementProto[name] = function (this: { source: string }, ...args: unknown[]) {
      statements.push(this.source);
      return original.apply(this, args);
    };
  }
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const q = args[0];
    statements.push(
      typeof q === 'string'
        ? q
        : typeof (q as { text?: unknown })?.text === 'string'
          ? (q as { text: string }).text
          : '',
    );
    return (pgQuery as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof pgQuery;
});
after(() => {
  Object.assign(statementProto, sqliteRuns);
  pg.Client.prototype.query = pgQuery;
});

for (const target of [sqliteTarget(), postgresTarget()]) {
  describe(`deferred writes on ${target.name}`, () => {
    after(() => target.close());

    test('a burst of 200 session opens runs no statement until the tick, then one transaction per 100 rows stores them', async () => {
      const db = await target.fresh();
      const store = await open(db, { writeFlushMs: 1000 });
      try {
        statements.length = 0;
        const since = new Date().toISOString();
        const done: Array<Promise<void>> = [];
        for (let i = 0; i < 200; i++) {
          done.push(store.devices.seen({ deviceId: mac(i), clientId: `c-${i}` }));
          done.push(
            store.sessions.add({
              sessionId: `s-${i}`,
              deviceId: mac(i),
              clientId: `c-${i}`,
              agent: null,
              replica: store.replica,
              since,
            }),
          );
        }
        // Well inside the tick: the event loop turned many times, the database was not touched.
        await new Promise((r) => setTimeout(r, 100));
        assert.deepEqual(hotPathStatements(), [], 'no statement on devices or live_sessions before the tick');
        await Promise.all(done);
        assert.equal(transactions(), 4, 'the burst is one transaction per 100 rows');
        const c = await raw(db);
        try {
          const devices = await c.db.selectFrom('devices').select('device_id').execute();
          const sessions = await c.db.selectFrom('live_sessions').select('session_id').execute();
          assert.equal(devices.length, 200);
          assert.equal(sessions.length, 200);
        } finally {
          await c.db.destroy();
        }
      } finally {
        await store.close();
      }
    });

    test('a device seen 50 times in a tick is written once, with the newest stamp and what any sighting told', async () => {
      let now = Date.parse('2026-01-01T00:00:00Z');
      const db = await target.fresh();
      const store = await open(db, { writeFlushMs: 300, now: () => now });
      try {
        await store.devices.seen({ deviceId: mac(1), clientId: 'c-1', board: 'bread' });
        statements.length = 0;
        const done: Array<Promise<void>> = [];
        for (let i = 0; i < 50; i++) {
          now += 1000;
          done.push(
            store.devices.seen({ deviceId: mac(1), clientId: 'c-1', ...(i === 10 ? { firmware: '2.0.0' } : {}) }),
          );
        }
        await Promise.all(done);
        assert.equal(hotPathStatements().length, 1, `one update, got ${hotPathStatements().join(' | ')}`);
        const r = await store.devices.get(mac(1));
        assert.equal(r?.lastSeen, new Date(now).toISOString());
        assert.equal(r?.firmware, '2.0.0');
        assert.equal(r?.board, 'bread');
      } finally {
        await store.close();
      }
    });

    test('queued rows land on their own (the timer), and an add removed within the tick leaves no row', async () => {
      const db = await target.fresh();
      const store = await open(db, { writeFlushMs: 200 });
      const c = await raw(db);
      try {
        const since = new Date().toISOString();
        void store.devices.seen({ deviceId: mac(7), clientId: 'c-7' });
        void store.sessions.add({
          sessionId: 'gone',
          deviceId: mac(7),
          clientId: 'c-7',
          agent: null,
          replica: store.replica,
          since,
        });
        void store.sessions.remove('gone');
        void store.sessions.add({
          sessionId: 'kept',
          deviceId: mac(7),
          clientId: 'c-7',
          agent: null,
          replica: store.replica,
          since,
        });
        // Nobody awaits, flushes or lists: the batch's timer stores them.
        await waitFor(
          async () =>
            (await c.db
              .selectFrom('devices')
              .select('last_seen')
              .where('device_id', '=', mac(7))
              .executeTakeFirst()) !== undefined,
          { what: 'the queued record to be stored', timeoutMs: 10_000 },
        );
        const sessions = await c.db.selectFrom('live_sessions').select('session_id').execute();
        assert.deepEqual(
          sessions.map((s) => s.session_id),
          ['kept'],
        );
      } finally {
        await c.db.destroy();
        await store.close();
      }
    });

    test('a clean stop stores what is queued', async () => {
      const db = await target.fresh();
      const store = await open(db, { writeFlushMs: 3_600_000 });
      void store.devices.seen({ deviceId: mac(9), clientId: 'c-9', firmware: '1.2.3' });
      void store.sessions.add({
        sessionId: 's-9',
        deviceId: mac(9),
        clientId: 'c-9',
        agent: null,
        replica: store.replica,
        since: new Date().toISOString(),
      });
      await store.close();
      const c = await raw(db);
      try {
        const row = await c.db
          .selectFrom('devices')
          .select(['firmware', 'last_seen'])
          .where('device_id', '=', mac(9))
          .executeTakeFirst();
        assert.equal(row?.firmware, '1.2.3');
        assert.ok(row?.last_seen);
      } finally {
        await c.db.destroy();
      }
    });
  });
}
