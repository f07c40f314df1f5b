/**
 * @module Who is connected now, on which replica. Each replica heart-beats its row in `replicas`;
 * the sessions of a replica silent for REPLICA_TIMEOUT_MS (it crashed, or lost the database) are
 * dropped when someone lists, so the list never shows ghosts for long.
 */
import type { Kysely } from 'kysely';
import type { Database } from './schema.ts';
import type { WriteQueue } from './write-batcher.ts';

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

/** A live session's row to store (`row`) or remove (null), queued for the next batch (`deferred-writes.ts`). */
export interface LiveSessionWrite {
  kind: 'session';
  sessionId: string;
  row: LiveSession | null;
}

export interface LiveSessions {
  /** Queued, stored with the next tick's batch; resolves once that was attempted. */
  add(s: LiveSession): Promise<void>;
  /** Queued like `add` (an add still queued is dropped with it). */
  remove(sessionId: string): Promise<void>;
  /** Every replica's sessions; rows of a replica that stopped heart-beating (30 s) are dropped. */
  list(): Promise<LiveSession[]>;
}

export class StoreLiveSessions implements LiveSessions {
  readonly #db: Kysely<Database>;
  readonly #replica: string;
  readonly #deferred: WriteQueue<LiveSessionWrite>;
  readonly #now: () => number;

  constructor(
    db: Kysely<Database>,
    replica: string,
    deferred: WriteQueue<LiveSessionWrite>,
    now: () => number = Date.now,
  ) {
    this.#db = db;
    this.#replica = replica;
    this.#deferred = deferred;
    this.#now = now;
  }

  add(s: LiveSession): Promise<void> {
    this.#deferred.add([{ kind: 'session', sessionId: s.sessionId.slice(0, 64), row: s }]);
    return this.#deferred.settled();
  }

  remove(sessionId: string): Promise<void> {
    this.#deferred.add([{ kind: 'session', sessionId: sessionId.slice(0, 64), row: null }]);
    return this.#deferred.settled();
  }

  async list(): Promise<LiveSession[]> {
    // What this process queued a moment ago is in the answer.
    await this.#deferred.flush();
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
    return rows.map((r) => ({
      sessionId: r.session_id,
      deviceId: r.device_id,
      clientId: r.client_id,
      agent: r.agent,
      replica: r.replica,
      since: r.since,
    }));
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

/** Stores or removes one queued session row inside the batch's transaction. */
export async function writeLiveSession(trx: Kysely<Database>, w: LiveSessionWrite): Promise<void> {
  if (w.row === null) {
    await trx.deleteFrom('live_sessions').where('session_id', '=', w.sessionId).execute();
    return;
  }
  const s = w.row;
  const row = {
    session_id: w.sessionId,
    device_id: s.deviceId,
    client_id: s.clientId,
    agent: s.agent,
    replica: s.replica,
    since: s.since,
  };
  await trx
    .insertInto('live_sessions')
    .values(row)
    .onConflict((oc) => oc.column('session_id').doUpdateSet(row))
    .execute();
}
