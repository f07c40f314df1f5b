/**
 * @module The one way the store writes: a transaction that records what it changed in the change
 * feed (so other processes hear of it when it commits), then refreshes this process's cache and
 * tells its listeners. On SQLite the transaction takes the write lock first: a transaction that
 * read before writing could otherwise find that the CLI wrote meanwhile and fail at once.
 */
import type { Kysely } from 'kysely';
import type { Database } from './schema.ts';
import type { StoreChange } from './types.ts';
import type { ChangeFeed } from './change-feed.ts';
import type { CacheState } from './store-cache.ts';
import type { Dialect } from './migrations.ts';

export type Changed = (change: StoreChange) => void;

export class Writer {
  readonly db: Kysely<Database>;
  readonly dialect: Dialect;
  readonly #feed: ChangeFeed;
  readonly #cache: CacheState;

  constructor(db: Kysely<Database>, dialect: Dialect, feed: ChangeFeed, cache: CacheState) {
    this.db = db;
    this.dialect = dialect;
    this.#feed = feed;
    this.#cache = cache;
  }

  async write<T>(work: (trx: Kysely<Database>, changed: Changed) => Promise<T>): Promise<T> {
    const changes: StoreChange[] = [];
    const result = await this.db.transaction().execute(async (trx) => {
      // A write statement first takes SQLite's write lock (waiting up to busy_timeout for another process).
      if (this.dialect === 'sqlite') await trx.deleteFrom('store_changes').where('id', '<', 0).execute();
      const r = await work(trx, (c) => changes.push(c));
      for (const c of changes) await this.#feed.record(trx, c);
      return r;
    });
    // Committed: a failure to re-read (the database went away just now) must not make the write
    // look failed; the cache catches up at the next change or reload.
    if (changes.length > 0) await this.#cache.apply(changes).catch((err: unknown) => this.#cache.reportStale(err));
    return result;
  }
}
