/**
 * @module SQLite's change feed. The `devices` CLI is another process writing the same file, so
 * every write adds a row to `store_changes`, and the server looks about every 500 ms: first
 * `PRAGMA data_version` (a counter in memory that moves only when another connection committed, so
 * an idle poll reads no table), then the rows after the last one it saw. Rows older than a minute
 * are pruned; a process that starts reads the tables themselves, not old changes.
 */
import type BetterSqlite3 from 'better-sqlite3';
import type { Kysely } from 'kysely';
import type { Logger } from '../core/logger.ts';
import type { Database } from './schema.ts';
import type { StoreChange } from './types.ts';
import { parseFeedMessage, type ChangeFeed, type ChangeFeedHandlers } from './change-feed.ts';

const POLL_MS = 500;
const KEEP_MS = 60_000;
const PRUNE_EVERY_MS = 30_000;

export class SqliteChangeFeed implements ChangeFeed {
  readonly #db: Kysely<Database>;
  readonly #handle: BetterSqlite3.Database;
  readonly #origin: string;
  readonly #log: Logger;
  #timer: NodeJS.Timeout | undefined;
  #lastId = 0;
  #version = -1;
  #lastPrune = 0;
  #polling = false;
  #closed = false;

  constructor(db: Kysely<Database>, handle: BetterSqlite3.Database, origin: string, log: Logger) {
    this.#db = db;
    this.#handle = handle;
    this.#origin = origin;
    this.#log = log;
  }

  async record(db: Kysely<Database>, change: StoreChange): Promise<void> {
    await db
      .insertInto('store_changes')
      .values({ origin: this.#origin, change: JSON.stringify({ o: this.#origin, c: change }), at_ms: Date.now() })
      .execute();
  }

  async start(handlers: ChangeFeedHandlers): Promise<void> {
    const last = await this.#db
      .selectFrom('store_changes')
      .select((eb) => eb.fn.max('id').as('max'))
      .executeTakeFirst();
    this.#lastId = Number(last?.max ?? 0);
    this.#version = this.#dataVersion();
    this.#timer = setInterval(() => void this.#poll(handlers), POLL_MS);
    this.#timer.unref();
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#timer);
  }

  #dataVersion(): number {
    return Number(this.#handle.pragma('data_version', { simple: true }));
  }

  async #poll(handlers: ChangeFeedHandlers): Promise<void> {
    if (this.#polling || this.#closed) return;
    this.#polling = true;
    try {
      const version = this.#dataVersion();
      if (version !== this.#version) {
        this.#version = version;
        const rows = await this.#db
          .selectFrom('store_changes')
          .select(['id', 'origin', 'change'])
          .where('id', '>', this.#lastId)
          .orderBy('id')
          .limit(5000)
          .execute();
        const changes: StoreChange[] = [];
        for (const row of rows) {
          this.#lastId = Math.max(this.#lastId, Number(row.id));
          if (row.origin === this.#origin) continue;
          const m = parseFeedMessage(row.change);
          if (m) changes.push(m.c);
        }
        // More than one poll's worth: something wrote in bulk; reading everything again is cheaper.
        if (rows.length === 5000) handlers.resync();
        else if (changes.length > 0) handlers.changes(changes);
      }
      const now = Date.now();
      if (now - this.#lastPrune > PRUNE_EVERY_MS) {
        this.#lastPrune = now;
        await this.#db
          .deleteFrom('store_changes')
          .where('at_ms', '<', now - KEEP_MS)
          .execute();
      }
    } catch (err) {
      if (!this.#closed)
        this.#log.error({ err: (err as Error).message }, 'store: reading the change feed failed; retrying');
    } finally {
      this.#polling = false;
    }
  }
}
