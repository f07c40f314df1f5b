/**
 * @module better-sqlite3 as Kysely's SQLite driver sees it, with each prepared statement kept
 * by its SQL text. Kysely prepares every query it runs, and preparing (SQLite compiling the
 * statement) costs as much as running a small indexed one; the store runs the same few dozen
 * query shapes over and over (values are parameters), on the event loop. Bounded: past
 * MAX_STATEMENTS the least recently used is dropped (a shape that varies, such as `in (?, ?, …)`
 * lists, cannot grow it). A statement is run to its end before the next one starts (the driver
 * is synchronous), so sharing one is safe.
 */
import type BetterSqlite3 from 'better-sqlite3';
import type { SqliteDatabase, SqliteStatement } from 'kysely';

export const MAX_STATEMENTS = 256;

export function cachingStatements(handle: BetterSqlite3.Database, max = MAX_STATEMENTS): SqliteDatabase {
  const kept = new Map<string, SqliteStatement>();
  return {
    close: () => {
      kept.clear();
      handle.close();
    },
    prepare: (sql) => {
      let stmt = kept.get(sql);
      if (stmt) {
        // Most recently used last: the first one is the one to drop.
        kept.delete(sql);
      } else {
        stmt = handle.prepare(sql);
        if (kept.size >= max) {
          const oldest = kept.keys().next().value;
          if (oldest !== undefined) kept.delete(oldest);
        }
      }
      kept.set(sql, stmt);
      return stmt;
    },
  };
}
