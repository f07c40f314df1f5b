/**
 * @module Kysely's SQLite dialect with a first-come-first-served hand-over of its one connection.
 * Kysely serialises a single-connection dialect with a lock that, when released, wakes every query
 * waiting for it, of which one wins and the rest wait again: n queries queued at once cost about
 * n²/2 wake-ups, all on the event loop. A burst of hellos queues hundreds (each hello reads its
 * memory and its waiting messages), and the wake-ups took ten times the queries' own work (see
 * test/bench/store.ts). Here each release hands the connection to the oldest waiter alone: n
 * queries cost n hand-overs. Kysely's own lock is skipped by declaring the adapter
 * multi-connection; this driver is what keeps a transaction's statements together.
 */
import {
  SqliteAdapter,
  SqliteDialect,
  SqliteDriver,
  type DatabaseConnection,
  type Driver,
  type SqliteDialectConfig,
} from 'kysely';

class QueuedSqliteDriver extends SqliteDriver {
  readonly #waiting: Array<() => void> = [];
  #held = false;

  override async acquireConnection(): Promise<DatabaseConnection> {
    if (this.#held) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    this.#held = true;
    return super.acquireConnection();
  }

  override async releaseConnection(): Promise<void> {
    const next = this.#waiting.shift();
    // Handed over still held: nobody can slip in between.
    if (next) next();
    else this.#held = false;
  }
}

/** Declared multi-connection so that Kysely's waking lock stays off; QueuedSqliteDriver serialises instead. */
class QueuedSqliteAdapter extends SqliteAdapter {
  override get supportsMultipleConnections(): boolean {
    return true;
  }
}

export class QueuedSqliteDialect extends SqliteDialect {
  readonly #config: SqliteDialectConfig;

  constructor(config: SqliteDialectConfig) {
    super(config);
    this.#config = config;
  }

  override createDriver(): Driver {
    return new QueuedSqliteDriver(this.#config);
  }

  override createAdapter(): SqliteAdapter {
    return new QueuedSqliteAdapter();
  }
}
