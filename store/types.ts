/**
 * @module What the server keeps in its database, as the rest of the code sees it. One schema for
 * both dialects (SQLite embedded, PostgreSQL shared by replicas); the implementations live beside
 * this file. Reads the hot path needs (is this pair bound, which agent does this device use) are
 * answered from a per-process cache that the change feed keeps fresh; writes go to the database.
 */

/** An agent as stored: its settings are JSON, validated by `features/agents/agent-settings.ts` on the way in and out. */
export interface AgentRow {
  name: string;
  settings: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
}

/** A device the server has seen (OTA or a session), bound or not. */
export interface DeviceRecord {
  deviceId: string;
  clientId: string;
  alias: string | null;
  /** Agent name; null: the default agent. */
  agent: string | null;
  board: string | null;
  firmware: string | null;
  firstSeen: string;
  lastSeen: string;
}

/** Something another process (the CLI, another replica) changed; every cache listens to these. */
export type StoreChange =
  | { kind: 'device'; deviceId: string }
  | { kind: 'binding'; deviceId: string; clientId: string }
  | { kind: 'agent'; name: string }
  /**
   * A device's memory was deleted or moved (admin, revoke): live sessions of the pair (`clientId`;
   * without it, of every pair of the device) drop what they hold of it and read it again.
   */
  | { kind: 'memory'; deviceId: string; clientId?: string }
  /** A message for a device was queued, or its outcome written (store/push-messages.ts): the replica holding the device claims it. */
  | { kind: 'push'; id: string; deviceId: string };
