/**
 * @module PostgreSQL's change feed: every write sends `NOTIFY xiaozhi_store` in its transaction
 * (delivered to the listeners when it commits, not before), and one dedicated connection per
 * process LISTENs. That connection reconnects by itself (0.5 s, doubling to 5 s); once back, the
 * store reloads everything, since notifications sent meanwhile were lost.
 */
import pg from 'pg';
import { sql, type Kysely } from 'kysely';
import type { Logger } from '../core/logger.ts';
import type { Database } from './schema.ts';
import type { StoreChange } from './types.ts';
import { parseFeedMessage, type ChangeFeed, type ChangeFeedHandlers } from './change-feed.ts';
import { redactUrl } from './connect.ts';

const CHANNEL = 'xiaozhi_store';
const FIRST_RETRY_MS = 500;
const MAX_RETRY_MS = 5000;

export class PostgresChangeFeed implements ChangeFeed {
  readonly #url: string;
  readonly #origin: string;
  readonly #log: Logger;
  #client: pg.Client | undefined;
  #retryMs = FIRST_RETRY_MS;
  #retry: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(url: string, origin: string, log: Logger) {
    this.#url = url;
    this.#origin = origin;
    this.#log = log;
  }

  async record(db: Kysely<Database>, change: StoreChange): Promise<void> {
    await sql`select pg_notify(${CHANNEL}, ${JSON.stringify({ o: this.#origin, c: change })})`.execute(db);
  }

  /** Resolves once listening (the first time); start-up fails if that is impossible. */
  async start(handlers: ChangeFeedHandlers): Promise<void> {
    await this.#listen(handlers, false);
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#retry);
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => undefined);
  }

  async #listen(handlers: ChangeFeedHandlers, again: boolean): Promise<void> {
    const client = new pg.Client({ connectionString: this.#url, connectionTimeoutMillis: 5000, keepAlive: true });
    let lost = false;
    const onLost = (err?: Error): void => {
      if (lost || this.#closed) return;
      lost = true;
      if (this.#client === client) this.#client = undefined;
      client.end().catch(() => undefined);
      this.#log.error(
        { err: err?.message ?? 'connection ended', url: redactUrl(this.#url) },
        'store: change feed connection lost; reconnecting',
      );
      this.#schedule(handlers);
    };
    client.on('error', onLost);
    client.on('end', () => onLost());
    client.on('notification', (n) => {
      if (n.channel !== CHANNEL || !n.payload) return;
      const m = parseFeedMessage(n.payload);
      if (m && m.o !== this.#origin) handlers.changes([m.c]);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
    } catch (err) {
      lost = true;
      client.end().catch(() => undefined);
      if (!again) throw err;
      this.#schedule(handlers);
      return;
    }
    if (this.#closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.#client = client;
    this.#retryMs = FIRST_RETRY_MS;
    if (again) {
      this.#log.info({ url: redactUrl(this.#url) }, 'store: change feed reconnected');
      handlers.resync();
    }
  }

  #schedule(handlers: ChangeFeedHandlers): void {
    if (this.#closed) return;
    clearTimeout(this.#retry);
    this.#retry = setTimeout(() => void this.#listen(handlers, true), this.#retryMs);
    this.#retry.unref();
    this.#retryMs = Math.min(MAX_RETRY_MS, this.#retryMs * 2);
  }
}
