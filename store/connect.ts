/**
 * @module Opens the database a `store.url` names: `sqlite:PATH` (better-sqlite3 in WAL mode, PATH
 * relative to the data directory, which is created; `sqlite::memory:` for a private in-memory one)
 * or `postgres://…` (a pg Pool). A database that cannot be reached is a StoreError naming
 * `store.url` (with any password hidden), so start-up fails with a message the operator can act on.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { Kysely, PostgresDialect } from 'kysely';
import type { Logger } from '../core/logger.ts';
import { redactUrl } from '../core/redact-url.ts';
import type { Database } from './schema.ts';
import type { Dialect } from './migrations.ts';
import { cachingStatements } from './statement-cache.ts';
import { QueuedSqliteDialect } from './sqlite-dialect.ts';

/** Any store failure worth a clear message (bad URL, unreachable database). */
export class StoreError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreError';
  }
}

export interface Connection {
  dialect: Dialect;
  db: Kysely<Database>;
  /** SQLite: the file (or `:memory:`) and its handle, for the cheap change check. */
  sqlite?: { file: string; handle: BetterSqlite3.Database };
  /** PostgreSQL: the URL, for the listening client of the change feed. */
  postgresUrl?: string;
}

/** The URL without its credentials (userinfo, `?password=`), for messages and logs. */
export { redactUrl };

export function dialectOf(url: string): Dialect {
  if (url.startsWith('sqlite:')) return 'sqlite';
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) return 'postgres';
  throw new StoreError(
    `store.url ${redactUrl(url)} is not understood: use sqlite:PATH or postgres://USER:PASSWORD@HOST:PORT/DATABASE`,
  );
}

/**
 * A `postgres://` URL with `password` (any characters) put in its userinfo, encoded so that pg
 * decodes it back exactly; '' leaves the URL as it is. The password kept apart from the URL
 * (`store.password`) is what lets compose pass one holding `@`, `/` or `:`.
 */
export function withPassword(url: string, password: string): string {
  if (password === '' || dialectOf(url) !== 'postgres') return url;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new StoreError(`store.url ${redactUrl(url)} is not a valid URL`);
  }
  // The setter leaves '%' as it is: encoding first makes every character survive pg's decoding.
  u.password = encodeURIComponent(password);
  return u.href;
}

/** Where `sqlite:PATH` lives: PATH relative to the data directory. */
export function sqliteFile(url: string, dataDir: string): string {
  const path = url.slice('sqlite:'.length);
  if (path === ':memory:') return path;
  if (!path) throw new StoreError('store.url sqlite: needs a file name (sqlite:xiaozhi.db)');
  return isAbsolute(path) ? path : resolve(dataDir, path);
}

/**
 * `create: false` (the operator's commands): a SQLite file that does not exist is a StoreError
 * naming it, and neither it nor its directory is made: a command pointed at the wrong place must
 * say so, not work on a new empty database.
 */
export async function connect(
  url: string,
  dataDir: string,
  log: Logger,
  opts: { create?: boolean } = {},
): Promise<Connection> {
  const dialect = dialectOf(url);
  const create = opts.create !== false;
  if (dialect === 'sqlite') {
    const file = sqliteFile(url, dataDir);
    if (!create && (file === ':memory:' || !existsSync(file))) {
      throw new StoreError(
        `no store at sqlite:${file}: nothing was created. The server makes it at its first start; check store.url, server.dataDir (XIAOZHI_DATA_DIR) or --file`,
      );
    }
    let handle: BetterSqlite3.Database | undefined;
    try {
      if (create && file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
      handle = new BetterSqlite3(file, { fileMustExist: !create });
      handle.pragma('journal_mode = WAL');
      // The CLI and the server write the same file: wait for the other's write instead of failing.
      handle.pragma('busy_timeout = 5000');
      handle.pragma('synchronous = NORMAL');
    } catch (err) {
      // A file that opened but is not a database: its descriptor would otherwise stay open.
      handle?.close();
      throw new StoreError(`store.url ${url}: cannot open the database file ${file}: ${(err as Error).message}`, {
        cause: err,
      });
    }
    return {
      dialect,
      db: new Kysely<Database>({ dialect: new QueuedSqliteDialect({ database: cachingStatements(handle) }) }),
      sqlite: { file, handle },
    };
  }
  const pool = new pg.Pool({
    connectionString: url,
    max: 10,
    connectionTimeoutMillis: 5000,
    idleTimeoutMillis: 30_000,
  });
  watchPoolClients(pool, url, log);
  try {
    const client = await pool.connect();
    client.release();
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw new StoreError(`store.url ${redactUrl(url)}: cannot reach the database: ${(err as Error).message}`, {
      cause: err,
    });
  }
  return { dialect, db: new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }), postgresUrl: url };
}

/**
 * Every client of the pool gets its own `error` listener for its whole life. The pool listens only
 * on idle clients: a client checked out inside a transaction whose backend dies (a restart, a
 * failover, `pg_terminate_backend`) emits `error` with no listener, which would end the process.
 * The query in flight fails on its own; the pool drops the dead client and opens a new one at the
 * next query. Logged once per client (a backend's FATAL message is followed by the socket's end).
 */
function watchPoolClients(pool: pg.Pool, url: string, log: Logger): void {
  pool.on('connect', (client) => {
    let logged = false;
    client.on('error', (err) => {
      if (logged) return;
      logged = true;
      log.error({ err: err.message, url: redactUrl(url) }, 'store: database connection lost');
    });
  });
  // The pool re-emits an idle client's error; the client's own listener above has logged it.
  pool.on('error', () => undefined);
}
