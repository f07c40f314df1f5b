/**
 * The SQLite connection as the store drives it: queries queued together are handed the one
 * connection in turn (work per query does not grow with the queue: counted in promises made, not
 * timed), a transaction's statements are not interleaved with others, and each query shape is
 * prepared once (bounded).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHook } from 'node:async_hooks';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, sql } from 'kysely';
import { QueuedSqliteDialect } from '../../../store/sqlite-dialect.ts';
import { cachingStatements } from '../../../store/statement-cache.ts';

interface T {
  t: { id: number; v: string };
}

async function memoryDb(): Promise<{ db: Kysely<T>; handle: BetterSqlite3.Database }> {
  const handle = new BetterSqlite3(':memory:');
  const db = new Kysely<T>({ dialect: new QueuedSqliteDialect({ database: cachingStatements(handle) }) });
  await sql`create table t (id integer primary key, v text)`.execute(db);
  return { db, handle };
}

/** Promises made while `n` queries run at once, per query. */
async function promisesPerQuery(db: Kysely<T>, n: number): Promise<number> {
  let made = 0;
  const hook = createHook({
    init(_id, type) {
      if (type === 'PROMISE') made++;
    },
  });
  hook.enable();
  try {
    await Promise.all(
      Array.from({ length: n }, (_, i) => db.selectFrom('t').selectAll().where('id', '=', i).execute()),
    );
  } finally {
    hook.disable();
  }
  return made / n;
}

test('n queries queued at once cost each the same as a few: the connection is handed over, not fought for', async () => {
  const { db } = await memoryDb();
  try {
    await promisesPerQuery(db, 10);
    const few = await promisesPerQuery(db, 20);
    const many = await promisesPerQuery(db, 400);
    assert.ok(many < few * 1.5, `promises per query: ${few.toFixed(1)} with 20 queued, ${many.toFixed(1)} with 400`);
  } finally {
    await db.destroy();
  }
});

test("a transaction's statements are not interleaved with queries queued meanwhile", async () => {
  const { db } = await memoryDb();
  try {
    const seen: string[] = [];
    const tx = db.transaction().execute(async (trx) => {
      await trx.insertInto('t').values({ id: 1, v: 'a' }).execute();
      seen.push('tx-insert');
      await new Promise((r) => setTimeout(r, 20));
      const rows = await trx.selectFrom('t').selectAll().execute();
      seen.push(`tx-read-${rows.length}`);
    });
    const outside = (async () => {
      await new Promise((r) => setImmediate(r));
      const rows = await db.selectFrom('t').selectAll().execute();
      seen.push(`outside-${rows.length}`);
    })();
    await Promise.all([tx, outside]);
    assert.deepEqual(seen, ['tx-insert', 'tx-read-1', 'outside-1']);
  } finally {
    await db.destroy();
  }
});

test('each query shape is prepared once; the kept statements are bounded', async () => {
  const handle = new BetterSqlite3(':memory:');
  const prepared: string[] = [];
  const counting = new Proxy(handle, {
    get(target, prop, receiver) {
      if (prop === 'prepare') return (s: string) => (prepared.push(s), target.prepare(s));
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  const cache = cachingStatements(counting, 4);
  cache.prepare('create table t (id integer primary key)').run([]);
  for (let i = 0; i < 10; i++) cache.prepare('select * from t where id = ?').all([i]);
  assert.equal(prepared.filter((s) => s.startsWith('select * from t where id')).length, 1);
  for (let i = 0; i < 6; i++) cache.prepare(`select ${i} from t`).all([]);
  cache.prepare('select * from t where id = ?').all([1]);
  assert.equal(
    prepared.filter((s) => s.startsWith('select * from t where id')).length,
    2,
    'dropped past the bound, prepared again',
  );
  cache.close();
  assert.equal(handle.open, false);
});
