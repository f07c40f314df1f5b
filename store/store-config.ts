/**
 * @module The `store` block of the configuration: where the database is. Beside the store that
 * opens it, as each feature room keeps its own block; server/config-schema.ts combines them.
 */
import { z } from 'zod';

/** The database: bindings, agents, device records (store/). */
export const StoreSchema = z.strictObject({
  /**
   * `sqlite:PATH` (PATH relative to `server.dataDir`; created on first start) or
   * `postgres://USER:PASSWORD@HOST:PORT/DATABASE` (shared by replicas). Env DATABASE_URL overrides.
   */
  url: z
    .string()
    .regex(/^(sqlite:.+|postgres(ql)?:\/\/.+)$/, 'must be sqlite:PATH or postgres://USER:PASSWORD@HOST:PORT/DATABASE')
    .default('sqlite:xiaozhi.db'),
  /**
   * PostgreSQL: the password, kept apart from `url` so it may hold any character (`@`, `/`, `:`)
   * without URL-encoding (compose cannot encode). Set, it replaces a password in `url`. Env
   * DATABASE_PASSWORD overrides; redacted from logs.
   */
  password: z.string().default(''),
});
