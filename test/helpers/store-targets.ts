/**
 * The databases the store's tests run against, each case on both: SQLite in a temp folder and a
 * throwaway PostgreSQL cluster (test/helpers/postgres.ts). `fresh()` gives a new empty database and
 * the data directory to open it with; `close()` removes them all.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore, type OpenStoreOptions, type Store } from '../../store/store.ts';
import { connect, type Connection } from '../../store/connect.ts';
import { silentLogger } from '../../core/logger.ts';
import { startPostgres, type TestPostgres } from './postgres.ts';

export interface StoreTarget {
  name: 'sqlite' | 'postgres';
  /** A new empty database and a data directory of its own. */
  fresh(): Promise<{ url: string; dataDir: string }>;
  close(): Promise<void>;
}

export function sqliteTarget(): StoreTarget {
  const dirs: string[] = [];
  return {
    name: 'sqlite',
    async fresh() {
      const dataDir = mkdtempSync(join(tmpdir(), 'store-'));
      dirs.push(dataDir);
      return { url: 'sqlite:xiaozhi.db', dataDir };
    },
    async close() {
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    },
  };
}

export function postgresTarget(): StoreTarget & { cluster(): TestPostgres } {
  let pg: TestPostgres | undefined;
  const dirs: string[] = [];
  return {
    name: 'postgres',
    cluster() {
      if (!pg) throw new Error('the cluster is not started');
      return pg;
    },
    async fresh() {
      pg ??= await startPostgres();
      const dataDir = mkdtempSync(join(tmpdir(), 'store-pg-'));
      dirs.push(dataDir);
      return { url: await pg.database(), dataDir };
    },
    async close() {
      await pg?.stop();
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    },
  };
}

export type StoreOptions = Partial<Omit<OpenStoreOptions, 'url' | 'dataDir'>>;

export function open(db: { url: string; dataDir: string }, opts: StoreOptions = {}): Promise<Store> {
  return openStore({
    url: db.url,
    dataDir: db.dataDir,
    secret: '',
    codeTtlMs: 600_000,
    pendingPerSource: 3,
    replica: 'test',
    log: silentLogger,
    ...opts,
  });
}

/** A raw connection to the same database, to plant rows the store would never write. */
export function raw(db: { url: string; dataDir: string }): Promise<Connection> {
  return connect(db.url, db.dataDir, silentLogger);
}
