/**
 * @module Who is connected now, on which replica. Each replica heart-beats its row in `replicas`;
 * the sessions of a replica silent for REPLICA_TIMEOUT_MS (it crashed, or lost the database) are
 * dropped when someone lists, so the list never shows ghosts for long.
 */
import type { Kysely } from 'kysely';
import type { Database } from './schema.ts';

export const HEARTBEAT_MS = 10_000;
export const REPLICA_TIMEOUT_MS = 30_000;

export interface LiveSession {
  sessionId: string;
  deviceId: string | null;
  clientId: string | null;
  agent: string | null;
  replica: string;
  since: string;
}

export interface LiveSessions {
  add(s: LiveSession): Promise<void>;
  remove(sessionId: string): Promise<void>;
  /** Every replica's sessions; rows of a replica that stopped heart-beating (30 s) are dropped. */
  list(): Promise<LiveSession[]>;
}

export class StoreLiveSessions implements LiveSessions {
  readonly #db: Kysely<Database>;
  readonly #replica: string;
  readonly #now: () => number;

  constructor(db: Kysely<Database>, replica: string, now: () => number = Date.now) {
    this.#db = db;
    this.#replica = replica;
    this.#now = now;
  }

  async add(s: LiveSession): Promise<void> {
    const row = { session_id: s.sessionId.slice(0, 64), device_id: s.deviceId, client_id: s.clientId, agent: s.agent, replica: s.replica, since: s.since };
    await this.#db.insertInto('live_sessions').values(row).onConflict((oc) => oc.column('session_id').doUpdateSet(row)).execute();
  }

  async remove(sessionId: string): Promise<void> {
    await this.#db.deleteFrom('live_sessions').where('session_id', '=', sessionId).execute();
  }

  async list(): Promise<LiveSession[]> {
    const cutoff = this.#now() - REPLICA_TIMEOUT_MS;
    const stale = await this.#db.selectFrom('replicas').select('replica').where('heartbeat_ms', '<', cutoff).execute();
    if (stale.length > 0) {
      const names = stale.map((r) => r.replica);
      await this.#db.deleteFrom('live_sessions').where('replica', 'in', names).execute();
      await this.#db.deleteFrom('replicas').where('replica', 'in', names).execute();
    }
    const rows = await this.#db
      .selectFrom('live_sessions')
      .selectAll()
      .where('replica', 'in', (eb) => eb.selectFrom('replicas').select('replica'))
      .orderBy('since')
      .execute();
    return rows.map((r) => ({ sessionId: r.session_id, deviceId: r.device_id, clientId: r.client_id, agent: r.agent, replica: r.replica, since: r.since }));
  }

  /** This replica is alive (every HEARTBEAT_MS while the store is open). */
  async heartbeat(): Promise<void> {
    const now = this.#now();
    await this.#db
      .insertInto('replicas')
      .values({ replica: this.#replica, heartbeat_ms: now })
      .onConflict((oc) => oc.column('replica').doUpdateSet({ heartbeat_ms: now }))
      .execute();
  }

  /** At start (a previous process of the same name left rows) and at close: this replica's rows go. */
  async clear(): Promise<void> {
    await this.#db.deleteFrom('live_sessions').where('replica', '=', this.#replica).execute();
    await this.#db.deleteFrom('replicas').where('replica', '=', this.#replica).execute();
  }
}
