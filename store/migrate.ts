/**
 * @module Brings the schema to the version this code expects (store/migrations.ts), under
 * Kysely's migration lock. Returns the schema version (the newest migration's name).
 */
import type { Kysely } from 'kysely';
import { Migrator } from 'kysely/migration';
import type { Database } from './schema.ts';
import { migrationProvider, type Dialect } from './migrations.ts';
import { StoreError } from './connect.ts';

/** SQLite: another process (the CLI, a second server) holding the write lock at the same moment. */
const isBusy = (err: unknown): boolean =>
  /SQLITE_BUSY|database is locked/i.test(
    String((err as { code?: string })?.code ?? '') + String((err as Error)?.message ?? ''),
  );

export async function migrate(db: Kysely<Database>, dialect: Dialect, where: string): Promise<string> {
  // Migrations see the database without our table types (they describe the tables as they were).
  const migrator = new Migrator({
    db: db as Kysely<unknown>,
    provider: migrationProvider(dialect),
    migrationTableName: 'schema_migrations',
    migrationLockTableName: 'schema_migrations_lock',
  });
  for (let attempt = 1; ; attempt++) {
    const { error, results } = await migrator.migrateToLatest();
    if (!error) {
      const applied = await migrator.getMigrations();
      return (
        applied
          .filter((m) => m.executedAt !== undefined)
          .map((m) => m.name)
          .sort()
          .at(-1) ??
        results?.at(-1)?.migrationName ??
        ''
      );
    }
    if (dialect === 'sqlite' && isBusy(error) && attempt < 5) {
      await new Promise((r) => setTimeout(r, 200 * attempt));
      continue;
    }
    throw new StoreError(
      `store.url ${where}: migrating the database schema failed: ${(error as Error).message ?? String(error)}`,
      { cause: error },
    );
  }
}
