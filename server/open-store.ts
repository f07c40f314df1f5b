/**
 * @module The store as the configuration names it (`store.url` with `store.password`, `server.dataDir`, the activation
 * settings): what the server, the `devices` CLI and `npm run db` all open, so they share one database.
 */
import type { Logger } from '../core/logger.ts';
import type { Config } from './config.ts';
import { defaultReplicaId, openStore, type Store } from '../store/store.ts';
import { redactUrl, sqliteFile, withPassword } from '../store/connect.ts';

/** Where the database is, for the log and messages: the SQLite file's path, or the URL without its password. */
export function storeLocation(config: Config): string {
  const url = config.store.url;
  return url.startsWith('sqlite:') ? `sqlite:${sqliteFile(url, config.server.dataDir)}` : redactUrl(url);
}

/**
 * `watch: false` (the CLI): no change feed and no heartbeat, only reads and writes. `create:
 * false` (the `devices` CLI): a store that does not exist is an error naming it, not a new one.
 */
export function openConfiguredStore(
  config: Config,
  log: Logger,
  opts: { watch?: boolean; create?: boolean } = {},
): Promise<Store> {
  const a = config.server.auth;
  return openStore({
    url: withPassword(config.store.url, config.store.password),
    dataDir: config.server.dataDir,
    secret: a.secret,
    codeTtlMs: a.codeTtlS * 1000,
    pendingPerSource: a.pendingPerAddress,
    replica: defaultReplicaId(),
    log,
    ...(opts.watch !== undefined ? { watch: opts.watch } : {}),
    ...(opts.create !== undefined ? { create: opts.create } : {}),
  });
}
