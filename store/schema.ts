/**
 * @module The tables as Kysely sees them: one schema for SQLite and PostgreSQL (store/migrations.ts
 * creates it). Times the code compares are milliseconds since the epoch (`*_ms`, bigint in
 * PostgreSQL, which the driver returns as a string: read them through `Number`); times shown to
 * people are ISO strings.
 */
import type { ColumnType, Generated } from 'kysely';

/** A bigint column: written as a number, read as a number (SQLite) or a string (PostgreSQL). */
export type Millis = ColumnType<number | string, number, number>;

export interface SettingsTable {
  key: string;
  value: string;
}

export interface BindingsTable {
  id: string;
  device_id: string;
  client_id: string;
  bound_at: string;
  generation: number;
}

export interface PendingCodesTable {
  code: string;
  device_id: string;
  client_id: string;
  /** The requester's address key: codes are budgeted per source. */
  source: string;
  expires_ms: Millis;
  created_ms: Millis;
  generation: number;
}

export interface DevicesTable {
  device_id: string;
  client_id: string;
  alias: string | null;
  agent: string | null;
  board: string | null;
  firmware: string | null;
  first_seen: string;
  last_seen: string;
}

export interface AgentsTable {
  name: string;
  /** JSON text. */
  settings: string;
  created_at: string;
  updated_at: string;
}

export interface LiveSessionsTable {
  session_id: string;
  device_id: string | null;
  client_id: string | null;
  agent: string | null;
  replica: string;
  since: string;
}

export interface ReplicasTable {
  replica: string;
  heartbeat_ms: Millis;
}

/** SQLite's change feed: each write adds a row, other processes poll for new ones. */
export interface StoreChangesTable {
  id: Generated<number>;
  origin: string;
  /** JSON of a StoreChange. */
  change: string;
  at_ms: Millis;
}

export interface ConversationTurnsTable {
  id: Generated<number>;
  device_id: string;
  /** The pair's Client-Id (lower case); '' for turns kept from before memory was per pair (unassigned). */
  client_id: string;
  agent: string | null;
  role: string;
  text: string;
  created_at: string;
}

export interface MemoryFactsTable {
  id: Generated<number>;
  device_id: string;
  /** As in conversation_turns. */
  client_id: string;
  agent: string | null;
  fact: string;
  created_at: string;
  updated_at: string;
}

/** One pair's running summary with one agent (turns up to `upto_id` folded in). */
export interface MemorySummariesTable {
  device_id: string;
  /** As in conversation_turns. */
  client_id: string;
  agent: string;
  text: string;
  upto_id: Millis;
  updated_at: string;
}

export interface McpTokensTable {
  agent: string;
  token_hash: string;
  created_at: string;
}

/** The MCP endpoint's bridges as each server process publishes them (for the other replicas). */
export interface McpBridgesTable {
  id: string;
  /** The publishing process (its relay id). */
  owner: string;
  agent: string;
  name: string;
  address: string;
  connected_at: string;
  /** JSON of the bridge's ToolSpec[]. */
  tools: string;
  seen_ms: Millis;
}

/** A tool call one replica asks of a bridge connected to another. */
export interface McpCallsTable {
  id: string;
  /** The process the bridge is connected to. */
  owner: string;
  bridge_id: string;
  tool: string;
  /** JSON of the arguments. */
  args: string;
  /** 'queued', 'running' or 'done'. */
  state: string;
  /** JSON of the ToolResult once done. */
  result: string | null;
  created_ms: Millis;
}

/** A reminder the model set for a device; deleted once delivered (or dropped as stale). */
export interface RemindersTable {
  id: Generated<number>;
  device_id: string;
  /** The pair it was set from: it is spoken on that pair. */
  client_id: string;
  /** The device's agent when it was set (the admin's view). */
  agent: string | null;
  text: string;
  due_ms: Millis;
  /** When it is tried next: `due_ms`, later after a failed delivery. */
  next_ms: Millis;
  /** 'pending' or 'firing' (claimed by one replica). */
  state: string;
  claimed_by: string | null;
  claimed_ms: ColumnType<number | string | null, number | null, number | null>;
  created_at: string;
}

/** A message the server asked a device to say: waiting for it, or handed to the replica holding it. */
export interface PushMessagesTable {
  id: string;
  device_id: string;
  /** The pair it waits for (lower case); null only for a session without a Client-Id. */
  client_id: string | null;
  text: string;
  /** 1: the running turn is aborted for it. */
  interrupt: number;
  /** Who asked ('admin', 'reminder'). */
  source: string;
  /** 'pending', 'claimed', then how it went ('spoken', 'after_turn', 'notified', 'alerted') or 'cancelled'. */
  state: string;
  /** The replica that claimed it. */
  claimed_by: string | null;
  created_ms: Millis;
  /** A pending message past this is not delivered any more. */
  expires_ms: Millis;
}

export interface Database {
  settings: SettingsTable;
  bindings: BindingsTable;
  pending_codes: PendingCodesTable;
  devices: DevicesTable;
  agents: AgentsTable;
  live_sessions: LiveSessionsTable;
  replicas: ReplicasTable;
  store_changes: StoreChangesTable;
  conversation_turns: ConversationTurnsTable;
  memory_facts: MemoryFactsTable;
  memory_summaries: MemorySummariesTable;
  mcp_tokens: McpTokensTable;
  mcp_bridges: McpBridgesTable;
  mcp_calls: McpCallsTable;
  reminders: RemindersTable;
  push_messages: PushMessagesTable;
}
