/**
 * @module The schema's versions, as code (a compiled `dist/` has no migration files to read).
 * Each migration runs once, in name order, at `openStore` and by `npm run db -- migrate`; Kysely's
 * Migrator holds a lock while it runs (an advisory lock on PostgreSQL, the write lock on SQLite),
 * so two replicas starting together do not both migrate. Never edit a released migration: add one.
 */
import { sql, type CreateTableBuilder, type Kysely } from 'kysely';
import type { Migration, MigrationProvider } from 'kysely/migration';

export type Dialect = 'sqlite' | 'postgres';

/** An auto-numbered primary key in either dialect. */
function withId<T extends string>(t: CreateTableBuilder<T, never>, dialect: Dialect): CreateTableBuilder<T, 'id'> {
  return dialect === 'postgres'
    ? t.addColumn('id', 'bigserial', (c) => c.primaryKey())
    : t.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement());
}

function initial(dialect: Dialect): Migration {
  return {
    // The database is untyped here: a migration describes the tables as they were then.
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable('settings')
        .addColumn('key', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('value', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('bindings')
        .addColumn('id', 'varchar(16)', (c) => c.primaryKey())
        .addColumn('device_id', 'varchar(17)', (c) => c.notNull())
        .addColumn('client_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('bound_at', 'varchar(40)', (c) => c.notNull())
        .addColumn('generation', 'integer', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('bindings_device').on('bindings').column('device_id').execute();
      await db.schema
        .createTable('pending_codes')
        .addColumn('code', 'varchar(6)', (c) => c.primaryKey())
        .addColumn('device_id', 'varchar(17)', (c) => c.notNull())
        .addColumn('client_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('source', 'varchar(64)', (c) => c.notNull())
        .addColumn('expires_ms', 'bigint', (c) => c.notNull())
        .addColumn('created_ms', 'bigint', (c) => c.notNull())
        .addColumn('generation', 'integer', (c) => c.notNull())
        .addUniqueConstraint('pending_codes_pair', ['device_id', 'client_id'])
        .execute();
      await db.schema
        .createIndex('pending_codes_source')
        .on('pending_codes')
        .columns(['source', 'generation'])
        .execute();
      await db.schema
        .createTable('agents')
        .addColumn('name', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('settings', 'text', (c) => c.notNull())
        .addColumn('created_at', 'varchar(40)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(40)', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('devices')
        .addColumn('device_id', 'varchar(17)', (c) => c.primaryKey())
        .addColumn('client_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('alias', 'varchar(100)')
        .addColumn('agent', 'varchar(64)')
        .addColumn('board', 'varchar(100)')
        .addColumn('firmware', 'varchar(100)')
        .addColumn('first_seen', 'varchar(40)', (c) => c.notNull())
        .addColumn('last_seen', 'varchar(40)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('devices_last_seen').on('devices').column('last_seen').execute();
      await db.schema.createIndex('devices_agent').on('devices').column('agent').execute();
      await db.schema
        .createTable('live_sessions')
        .addColumn('session_id', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('device_id', 'varchar(17)')
        .addColumn('client_id', 'varchar(36)')
        .addColumn('agent', 'varchar(64)')
        .addColumn('replica', 'varchar(200)', (c) => c.notNull())
        .addColumn('since', 'varchar(40)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('live_sessions_replica').on('live_sessions').column('replica').execute();
      await db.schema
        .createTable('replicas')
        .addColumn('replica', 'varchar(200)', (c) => c.primaryKey())
        .addColumn('heartbeat_ms', 'bigint', (c) => c.notNull())
        .execute();
      await withId(db.schema.createTable('store_changes'), dialect)
        .addColumn('origin', 'varchar(200)', (c) => c.notNull())
        .addColumn('change', 'text', (c) => c.notNull())
        .addColumn('at_ms', 'bigint', (c) => c.notNull())
        .execute();
      // What the conversation memory, the MCP access point and reminders keep.
      await withId(db.schema.createTable('conversation_turns'), dialect)
        .addColumn('device_id', 'varchar(17)', (c) => c.notNull())
        .addColumn('agent', 'varchar(64)')
        .addColumn('role', 'varchar(16)', (c) => c.notNull())
        .addColumn('text', 'text', (c) => c.notNull())
        .addColumn('created_at', 'varchar(40)', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('conversation_turns_device')
        .on('conversation_turns')
        .columns(['device_id', 'created_at'])
        .execute();
      await withId(db.schema.createTable('memory_facts'), dialect)
        .addColumn('device_id', 'varchar(17)', (c) => c.notNull())
        .addColumn('agent', 'varchar(64)')
        .addColumn('fact', 'text', (c) => c.notNull())
        .addColumn('created_at', 'varchar(40)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(40)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('memory_facts_device').on('memory_facts').column('device_id').execute();
      await db.schema
        .createTable('mcp_tokens')
        .addColumn('agent', 'varchar(64)', (c) => c.notNull())
        .addColumn('token_hash', 'varchar(128)', (c) => c.primaryKey())
        .addColumn('created_at', 'varchar(40)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('mcp_tokens_agent').on('mcp_tokens').column('agent').execute();
      await withId(db.schema.createTable('reminders'), dialect)
        .addColumn('device_id', 'varchar(17)', (c) => c.notNull())
        .addColumn('due_at', 'varchar(40)', (c) => c.notNull())
        .addColumn('text', 'text', (c) => c.notNull())
        .addColumn('created_at', 'varchar(40)', (c) => c.notNull())
        .addColumn('delivered_at', 'varchar(40)')
        .execute();
      await db.schema.createIndex('reminders_due').on('reminders').columns(['delivered_at', 'due_at']).execute();
    },
  };
}

/** The MCP endpoint's bridges published by each process, and calls forwarded between replicas. */
function mcpEndpoint(): Migration {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable('mcp_bridges')
        .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('owner', 'varchar(200)', (c) => c.notNull())
        .addColumn('agent', 'varchar(64)', (c) => c.notNull())
        .addColumn('name', 'varchar(64)', (c) => c.notNull())
        .addColumn('address', 'varchar(64)', (c) => c.notNull())
        .addColumn('connected_at', 'varchar(40)', (c) => c.notNull())
        .addColumn('tools', 'text', (c) => c.notNull())
        .addColumn('seen_ms', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('mcp_bridges_agent').on('mcp_bridges').column('agent').execute();
      await db.schema
        .createTable('mcp_calls')
        .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('owner', 'varchar(200)', (c) => c.notNull())
        .addColumn('bridge_id', 'varchar(64)', (c) => c.notNull())
        .addColumn('tool', 'varchar(64)', (c) => c.notNull())
        .addColumn('args', 'text', (c) => c.notNull())
        .addColumn('state', 'varchar(16)', (c) => c.notNull())
        .addColumn('result', 'text')
        .addColumn('created_ms', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('mcp_calls_owner').on('mcp_calls').columns(['owner', 'state']).execute();
    },
  };
}

/**
 * Device memory: each conversation turn and fact belongs to one device and one agent (a device
 * moved to another agent starts that agent's memory clean), and a running summary per pair.
 */
function memory(): Migration {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createIndex('conversation_turns_device_agent')
        .on('conversation_turns')
        .columns(['device_id', 'agent', 'id'])
        .execute();
      await db.schema.createIndex('conversation_turns_created').on('conversation_turns').column('created_at').execute();
      await db.schema
        .createIndex('memory_facts_device_agent')
        .on('memory_facts')
        .columns(['device_id', 'agent'])
        .execute();
      await db.schema
        .createTable('memory_summaries')
        .addColumn('device_id', 'varchar(17)', (c) => c.notNull())
        .addColumn('agent', 'varchar(64)', (c) => c.notNull())
        .addColumn('text', 'text', (c) => c.notNull())
        // The newest turn id the summary covers: later turns are not folded in yet.
        .addColumn('upto_id', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(40)', (c) => c.notNull())
        .addPrimaryKeyConstraint('memory_summaries_pk', ['device_id', 'agent'])
        .execute();
    },
  };
}

/**
 * Speech the server starts (`say`): the messages waiting for an offline device, and the hand-over
 * between replicas (a row the replica holding the device claims, and the outcome it writes back).
 */
function push(): Migration {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable('push_messages')
        .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
        .addColumn('device_id', 'varchar(17)', (c) => c.notNull())
        .addColumn('client_id', 'varchar(36)')
        .addColumn('text', 'text', (c) => c.notNull())
        .addColumn('interrupt', 'integer', (c) => c.notNull())
        .addColumn('source', 'varchar(16)', (c) => c.notNull())
        .addColumn('state', 'varchar(16)', (c) => c.notNull())
        .addColumn('claimed_by', 'varchar(200)')
        .addColumn('created_ms', 'bigint', (c) => c.notNull())
        .addColumn('expires_ms', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('push_messages_device').on('push_messages').columns(['device_id', 'state']).execute();
      await db.schema.createIndex('push_messages_expires').on('push_messages').column('expires_ms').execute();
    },
  };
}

/**
 * Reminders the model sets: the unused table of the first version is replaced. A row is due at
 * `due_ms` and tried at `next_ms` (later after a failed delivery); `state` is `pending` until a
 * replica claims it (`firing`, with `claimed_by`/`claimed_ms`), and a delivered row is deleted.
 */
function reminders(dialect: Dialect): Migration {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema.dropTable('reminders').ifExists().execute();
      await withId(db.schema.createTable('reminders'), dialect)
        .addColumn('device_id', 'varchar(17)', (c) => c.notNull())
        .addColumn('client_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('agent', 'varchar(64)')
        .addColumn('text', 'text', (c) => c.notNull())
        .addColumn('due_ms', 'bigint', (c) => c.notNull())
        .addColumn('next_ms', 'bigint', (c) => c.notNull())
        .addColumn('state', 'varchar(16)', (c) => c.notNull())
        .addColumn('claimed_by', 'varchar(200)')
        .addColumn('claimed_ms', 'bigint')
        .addColumn('created_at', 'varchar(40)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('reminders_next').on('reminders').columns(['state', 'next_ms']).execute();
      await db.schema.createIndex('reminders_device').on('reminders').columns(['device_id', 'due_ms']).execute();
    },
  };
}

/**
 * Memory, reminders and waiting messages belong to the identity pair (Device-Id + Client-Id), not
 * the MAC alone: in open mode anyone may present a known MAC with another Client-Id, and must not
 * get that device's memory or messages. Rows stored before are given to the pair the device's
 * record names (the last pair seen at OTA or a session start; in activation mode the bound one).
 * Those of a device without a record keep `''` as their Client-Id, "unassigned": no session reads
 * them, the admin API shows them and moves them to a pair. Nothing is deleted.
 */
function pairMemory(): Migration {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      // The Client-Id the device's record names, lower case (as every pair is stored), or ''.
      const recorded = (table: string) =>
        sql`coalesce((select lower(d.client_id) from devices d where d.device_id = ${sql.ref(`${table}.device_id`)}), '')`;
      for (const table of ['conversation_turns', 'memory_facts']) {
        await db.schema
          .alterTable(table)
          .addColumn('client_id', 'varchar(36)', (c) => c.notNull().defaultTo(''))
          .execute();
        await sql`update ${sql.table(table)} set client_id = ${recorded(table)}`.execute(db);
      }
      await db.schema.dropIndex('conversation_turns_device_agent').execute();
      await db.schema
        .createIndex('conversation_turns_pair_agent')
        .on('conversation_turns')
        .columns(['device_id', 'client_id', 'agent', 'id'])
        .execute();
      await db.schema.dropIndex('memory_facts_device_agent').execute();
      await db.schema
        .createIndex('memory_facts_pair_agent')
        .on('memory_facts')
        .columns(['device_id', 'client_id', 'agent'])
        .execute();
      // The summary's key gains the Client-Id: a new table, filled from the old one.
      await db.schema
        .createTable('memory_summaries_by_pair')
        .addColumn('device_id', 'varchar(17)', (c) => c.notNull())
        .addColumn('client_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('agent', 'varchar(64)', (c) => c.notNull())
        .addColumn('text', 'text', (c) => c.notNull())
        .addColumn('upto_id', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(40)', (c) => c.notNull())
        .addPrimaryKeyConstraint('memory_summaries_pair_pk', ['device_id', 'client_id', 'agent'])
        .execute();
      await sql`insert into memory_summaries_by_pair (device_id, client_id, agent, text, upto_id, updated_at)
        select device_id, ${recorded('memory_summaries')}, agent, text, upto_id, updated_at from memory_summaries`.execute(
        db,
      );
      await db.schema.dropTable('memory_summaries').execute();
      await db.schema.alterTable('memory_summaries_by_pair').renameTo('memory_summaries').execute();
      // Reminders had their pair already; its Client-Id is compared in lower case from now on.
      await sql`update reminders set client_id = lower(client_id)`.execute(db);
      // A waiting message for "any client of the MAC" now waits for the pair the record names.
      await sql`update push_messages set client_id = lower(client_id) where client_id is not null`.execute(db);
      await sql`update push_messages set client_id = (select lower(d.client_id) from devices d where d.device_id = push_messages.device_id) where client_id is null`.execute(
        db,
      );
    },
  };
}

/** Every migration, by name (names sort in the order they run). */
export function migrations(dialect: Dialect): Record<string, Migration> {
  return {
    '0001-initial': initial(dialect),
    '0002-memory': memory(),
    '0003-mcp-endpoint': mcpEndpoint(),
    '0004-push': push(),
    '0005-reminders': reminders(dialect),
    '0006-pair-memory': pairMemory(),
  };
}

export function migrationProvider(dialect: Dialect): MigrationProvider {
  return { getMigrations: async () => migrations(dialect) };
}

/** The newest migration's name: the schema version this code expects. */
export function latestVersion(dialect: Dialect): string {
  return Object.keys(migrations(dialect)).sort().at(-1) ?? '';
}
