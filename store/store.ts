/**
 * @module The store: everything the server keeps, in one database (SQLite embedded by default,
 * PostgreSQL for replicas), behind small repositories (registry, device records, agents, live
 * sessions) and a per-process cache the change feed keeps fresh. `openStore` connects, migrates,
 * repairs, imports the old registry file once, loads the cache and starts listening.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Logger } from '../core/logger.ts';
import type { StoreChange } from './types.ts';
import type { DeviceRegistry } from './identity-registry-types.ts';
import { connect, redactUrl, StoreError } from './connect.ts';
import { migrate } from './migrate.ts';
import type { Dialect } from './migrations.ts';
import { purgeBadRows } from './repair.ts';
import { importLegacyRegistry } from './identity-json-import.ts';
import { hasSettings, raiseGeneration, storedSecret } from './identity-settings.ts';
import { CacheState, type StoreCache } from './store-cache.ts';
import type { ChangeFeed } from './change-feed.ts';
import { SqliteChangeFeed } from './sqlite-feed.ts';
import { PostgresChangeFeed } from './postgres-feed.ts';
import { Writer } from './writer.ts';
import { deferredWrites } from './deferred-writes.ts';
import { StoreDeviceRegistry } from './identity-registry.ts';
import { StoreDeviceRecords, type DeviceRecords } from './device-records.ts';
import { StoreAgents, type Agents } from './agents.ts';
import { HEARTBEAT_MS, StoreLiveSessions, type LiveSessions } from './live-sessions.ts';
import { StoreMcpTokens, type McpTokens } from './mcp-endpoint-tokens.ts';
import { StoreMcpRelay, type McpRelay } from './mcp-endpoint-relay.ts';
import { StoreDeviceMemory, type DeviceMemoryStore } from './memory.ts';
import { StorePushMessages, type PushMessages } from './push-messages.ts';
import { StoreReminders, type RemindersStore } from './reminders.ts';

export type { StoreCache } from './store-cache.ts';
export type { DeviceRecords } from './device-records.ts';
export type { Agents } from './agents.ts';
export type { LiveSession, LiveSessions } from './live-sessions.ts';
export type { McpTokens } from './mcp-endpoint-tokens.ts';
export type { McpRelay } from './mcp-endpoint-relay.ts';
export type { DeviceMemoryStore } from './memory.ts';
export type { PushMessages } from './push-messages.ts';
export type { RemindersStore, Reminder } from './reminders.ts';

export interface Store {
  readonly dialect: Dialect;
  /** Bindings, pending codes, token secret. */
  readonly registry: DeviceRegistry;
  /** Every device seen (OTA or a session), bound or not. */
  readonly devices: DeviceRecords;
  readonly agents: Agents;
  /** Who is connected now, on which replica. */
  readonly sessions: LiveSessions;
  /** The MCP endpoint's tokens (hashed), one agent each. */
  readonly mcpTokens: McpTokens;
  /** The MCP endpoint's bridges as every replica publishes them, and calls forwarded between replicas. */
  readonly mcpRelay: McpRelay;
  /** Each device's conversation turns, remembered facts and summary, per agent. */
  readonly memory: DeviceMemoryStore;
  /** Messages the server asked devices to say: the offline queue and the hand-over between replicas. */
  readonly pushMessages: PushMessages;
  /** Reminders the model set for each device, until delivered. */
  readonly reminders: RemindersStore;
  /** Synchronous reads for the hot path, kept fresh by the change feed. */
  readonly cache: StoreCache;
  /** The schema version (the newest migration applied). */
  readonly version: string;
  /** This process's replica id (its rows in `sessions`). */
  readonly replica: string;
  /** Changes made by this process, the CLI, or another replica (within ~1-2 s). Returns an unsubscribe. */
  onChange(listener: (c: StoreChange) => void): () => void;
  close(): Promise<void>;
}

export interface OpenStoreOptions {
  /** 'sqlite:PATH' (relative to dataDir) or 'postgres://…' */
  url: string;
  dataDir: string;
  /** Configured token secret; '' = the store's own (generated once). */
  secret: string;
  codeTtlMs: number;
  /** Pending codes one source address may hold (its oldest replaced). */
  pendingPerSource: number;
  /** This process's replica id. */
  replica: string;
  log: Logger;
  /** false for the CLI: no change feed, no heartbeat. */
  watch?: boolean;
  /**
   * false for the operator's commands: a database that does not exist, or holds no store yet (no
   * schema), is a StoreError naming it instead of a new empty store.
   */
  create?: boolean;
  /** The clock codes expire and records are stamped by (tests). */
  now?: () => number;
  /** How often device records and live sessions queued by the hot path are stored (ms); default 1000. */
  writeFlushMs?: number;
}

/** hostname:pid, what a replica is called by default. */
export function defaultReplicaId(): string {
  return `${hostname()}:${process.pid}`;
}

export async function openStore(opts: OpenStoreOptions): Promise<Store> {
  const log = opts.log;
  const conn = await connect(opts.url, opts.dataDir, log, { create: opts.create !== false });
  const { db, dialect } = conn;
  const where = conn.sqlite ? `sqlite:${conn.sqlite.file}` : redactUrl(opts.url);
  const timers: NodeJS.Timeout[] = [];
  let feed: ChangeFeed | undefined;
  let deferred: ReturnType<typeof deferredWrites> | undefined;
  const watch = opts.watch !== false;
  try {
    if (opts.create === false && !(await db.introspection.getTables()).some((t) => t.name === 'schema_migrations')) {
      throw new StoreError(
        `no store in ${where}: the database exists but no server has started on it, and nothing was created. Check store.url, server.dataDir (XIAOZHI_DATA_DIR) or --file`,
      );
    }
    const version = await migrate(db, dialect, where);
    await purgeBadRows(db, log, where);
    const empty =
      !(await hasSettings(db)) && (await db.selectFrom('bindings').select('id').limit(1).execute()).length === 0;
    if (empty) await importLegacyRegistry(db, opts.dataDir, log);
    const secret = opts.secret || (await storedSecret(db));
    const maxGen = await Promise.all([
      db
        .selectFrom('bindings')
        .select((eb) => eb.fn.max('generation').as('g'))
        .executeTakeFirst(),
      db
        .selectFrom('pending_codes')
        .select((eb) => eb.fn.max('generation').as('g'))
        .executeTakeFirst(),
    ]);
    await raiseGeneration(db, Math.max(0, ...maxGen.map((r) => Number(r?.g ?? 0))));

    const cache = new CacheState(db, log);
    await cache.reload();
    const origin = `${opts.replica}#${randomBytes(4).toString('hex')}`;
    feed = conn.sqlite
      ? new SqliteChangeFeed(db, conn.sqlite.handle, origin, log)
      : new PostgresChangeFeed(conn.postgresUrl ?? opts.url, origin, log);
    const writer = new Writer(db, dialect, feed, cache);
    const now = opts.now ?? Date.now;
    const registry = new StoreDeviceRegistry({
      writer,
      cache,
      secret,
      codeTtlMs: opts.codeTtlMs,
      pendingPerSource: opts.pendingPerSource,
      now,
    });
    deferred = deferredWrites(writer, log, opts.writeFlushMs);
    const devices = new StoreDeviceRecords(writer, cache, deferred, now);
    const agents = new StoreAgents(writer, now);
    const live = new StoreLiveSessions(db, opts.replica, deferred, now);
    const memory = new StoreDeviceMemory(writer, now);
    if (watch) {
      await feed.start({
        changes: (changes) =>
          cache
            .apply(changes)
            .catch((err: unknown) =>
              log.error({ err: (err as Error).message }, 'store: applying a change from another process failed'),
            ),
        resync: () =>
          void cache
            .reload()
            .catch((err: unknown) => log.error({ err: (err as Error).message }, 'store: reloading the cache failed')),
      });
      await live.clear();
      await live.heartbeat();
      const beat = setInterval(
        () =>
          void live
            .heartbeat()
            .catch((err: unknown) =>
              log.error({ err: (err as Error).message }, 'store: heartbeat failed (database unreachable?)'),
            ),
        HEARTBEAT_MS,
      );
      beat.unref();
      timers.push(beat);
    }
    let closing: Promise<void> | undefined;
    const openFeed = feed;
    const queued = deferred;
    return {
      dialect,
      registry,
      devices,
      agents,
      sessions: live,
      mcpTokens: new StoreMcpTokens(writer, now),
      mcpRelay: new StoreMcpRelay(db, now),
      memory,
      pushMessages: new StorePushMessages(writer, now),
      reminders: new StoreReminders(writer, now),
      cache,
      version,
      replica: opts.replica,
      onChange: (listener) => cache.onChange(listener),
      close: () => {
        closing ??= (async () => {
          for (const t of timers) clearInterval(t);
          // A clean stop stores what the hot path queued (last seen, sessions) before anything closes.
          await queued.close();
          await openFeed.close();
          if (watch)
            await live
              .clear()
              .catch((err: unknown) =>
                log.warn({ err: (err as Error).message }, "store: could not clear this replica's sessions"),
              );
          await db.destroy();
        })();
        return closing;
      },
    };
  } catch (err) {
    for (const t of timers) clearInterval(t);
    await deferred?.close().catch(() => undefined);
    await feed?.close().catch(() => undefined);
    await db.destroy().catch(() => undefined);
    throw err;
  }
}
