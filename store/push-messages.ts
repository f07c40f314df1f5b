/**
 * @module Messages the server asked a device to say (`say`) that no session here could take: the
 * offline queue, and the hand-over between replicas. A message is added `pending` (the change feed
 * tells every replica); the replica holding the device, or the first to see it connect, claims it
 * with one conditional update (exactly one wins), delivers it and writes how it went, which the
 * asking replica reads. A message waits for one identity pair (Device-Id + Client-Id): only that
 * pair's session or connection claims it. Bounded: per pair at most `maxPerDevice` wait (the oldest is dropped),
 * expired ones are deleted at each add, finished ones older than KEEP_DONE_MS at most once a
 * minute (that delete reads the whole table).
 */
import type { ExpressionBuilder, Kysely, Selectable } from 'kysely';
import type { Database, PushMessagesTable } from './schema.ts';
import type { Writer } from './writer.ts';
import { REPLICA_TIMEOUT_MS } from './live-sessions.ts';

/** Finished (or claimed and never finished) messages are kept this long, for the asker to read. */
export const KEEP_DONE_MS = 3600_000;

/** How a claimed message went. */
export type DeliveredState = 'spoken' | 'after_turn' | 'notified' | 'alerted';
export type PushMessageState = 'pending' | 'claimed' | 'cancelled' | DeliveredState;

export interface PushMessage {
  id: string;
  deviceId: string;
  /** The pair it waits for (lower case); null only for a session without a Client-Id. */
  clientId: string | null;
  text: string;
  interrupt: boolean;
  source: string;
  state: PushMessageState;
  claimedBy: string | null;
  createdMs: number;
  expiresMs: number;
}

export interface NewPushMessage {
  id: string;
  deviceId: string;
  clientId: string | null;
  text: string;
  interrupt: boolean;
  source: string;
  expiresMs: number;
}

export interface PushMessages {
  /**
   * Adds a pending message; past `maxPerDevice` waiting for its pair the oldest are deleted.
   * Returns how many waiting messages (of any device) had expired and were deleted.
   */
  add(m: NewPushMessage, maxPerDevice: number): Promise<{ expired: number; dropped: number }>;
  get(id: string): Promise<PushMessage | undefined>;
  /** Pending, unexpired messages, oldest first (a replica's sweep for devices it holds). */
  pending(limit: number): Promise<Array<{ id: string; deviceId: string; clientId: string | null }>>;
  /** Claims one pending, unexpired message for `replica`; undefined when someone else had it (or it expired). */
  claim(id: string, replica: string): Promise<PushMessage | undefined>;
  /** Claims the pending, unexpired messages waiting for this pair, oldest first. */
  claimFor(deviceId: string, clientId: string | null, replica: string): Promise<PushMessage[]>;
  /** Writes how a claimed message went (the asker hears of it through the change feed). */
  finish(id: string, state: DeliveredState): Promise<void>;
  /** Cancels a message nobody claimed: true when it was still pending. */
  cancel(id: string): Promise<boolean>;
  /** Puts a claimed message back to pending (the device was gone before it could be delivered). */
  release(id: string): Promise<void>;
  /** Whether another replica is alive now (heart-beating): only then can one hold a device this one does not. */
  othersAlive(replica: string): Promise<boolean>;
  /**
   * Messages claimed by a replica that stopped heart-beating (it crashed or was stopped between
   * claim and delivery) made pending again, never `replica`'s own; how many.
   */
  releaseOrphaned(replica: string): Promise<number>;
}

/** The rows of one pair: its Client-Id, or none (a session without one). */
function ofPair(clientId: string | null) {
  return (eb: ExpressionBuilder<Database, 'push_messages'>) =>
    clientId === null ? eb('client_id', 'is', null) : eb('client_id', '=', clientId);
}

/** Gives the waiting messages of pair `from` to pair `to` inside a transaction (the operator moves a device's memory); their ids. */
export async function moveWaitingMessages(
  trx: Kysely<Database>,
  deviceId: string,
  from: string,
  to: string,
): Promise<string[]> {
  const rows = await trx
    .selectFrom('push_messages')
    .select('id')
    .where('device_id', '=', deviceId.toLowerCase())
    .where('client_id', '=', from)
    .where('state', '=', 'pending')
    .execute();
  if (rows.length === 0) return [];
  const ids = rows.map((r) => r.id);
  await trx.updateTable('push_messages').set({ client_id: to }).where('id', 'in', ids).execute();
  return ids;
}

/** How often finished messages past KEEP_DONE_MS are deleted. */
const CLEAN_DONE_EVERY_MS = 60_000;

function fromRow(r: Selectable<PushMessagesTable>): PushMessage {
  return {
    id: r.id,
    deviceId: r.device_id,
    clientId: r.client_id,
    text: r.text,
    interrupt: Number(r.interrupt) === 1,
    source: r.source,
    state: r.state as PushMessageState,
    claimedBy: r.claimed_by,
    createdMs: Number(r.created_ms),
    expiresMs: Number(r.expires_ms),
  };
}

export class StorePushMessages implements PushMessages {
  readonly #w: Writer;
  readonly #now: () => number;
  #cleanedDone = 0;

  constructor(writer: Writer, now: () => number = Date.now) {
    this.#w = writer;
    this.#now = now;
  }

  async add(m: NewPushMessage, maxPerDevice: number): Promise<{ expired: number; dropped: number }> {
    const now = this.#now();
    const clientId = m.clientId?.toLowerCase() ?? null;
    return this.#w.write(async (trx, changed) => {
      const expired = await trx
        .deleteFrom('push_messages')
        .where('state', '=', 'pending')
        .where('expires_ms', '<=', now)
        .executeTakeFirst();
      if (now - this.#cleanedDone >= CLEAN_DONE_EVERY_MS) {
        this.#cleanedDone = now;
        await trx
          .deleteFrom('push_messages')
          .where('state', '<>', 'pending')
          .where('created_ms', '<', now - KEEP_DONE_MS)
          .execute();
      }
      await trx
        .insertInto('push_messages')
        .values({
          id: m.id,
          device_id: m.deviceId,
          client_id: clientId,
          text: m.text,
          interrupt: m.interrupt ? 1 : 0,
          source: m.source,
          state: 'pending',
          claimed_by: null,
          created_ms: now,
          expires_ms: m.expiresMs,
        })
        .execute();
      const waiting = await trx
        .selectFrom('push_messages')
        .select('id')
        .where('device_id', '=', m.deviceId)
        .where(ofPair(clientId))
        .where('state', '=', 'pending')
        .orderBy('created_ms', 'desc')
        .orderBy('id', 'desc')
        .execute();
      const over = waiting.slice(maxPerDevice).map((r) => r.id);
      if (over.length > 0) await trx.deleteFrom('push_messages').where('id', 'in', over).execute();
      changed({ kind: 'push', id: m.id, deviceId: m.deviceId });
      return { expired: Number(expired.numDeletedRows), dropped: over.length };
    });
  }

  async get(id: string): Promise<PushMessage | undefined> {
    const row = await this.#w.db.selectFrom('push_messages').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? fromRow(row) : undefined;
  }

  async pending(limit: number): Promise<Array<{ id: string; deviceId: string; clientId: string | null }>> {
    const rows = await this.#w.db
      .selectFrom('push_messages')
      .select(['id', 'device_id', 'client_id'])
      .where('state', '=', 'pending')
      .where('expires_ms', '>', this.#now())
      .orderBy('created_ms')
      .orderBy('id')
      .limit(limit)
      .execute();
    return rows.map((r) => ({ id: r.id, deviceId: r.device_id, clientId: r.client_id }));
  }

  async claim(id: string, replica: string): Promise<PushMessage | undefined> {
    const u = await this.#w.db
      .updateTable('push_messages')
      .set({ state: 'claimed', claimed_by: replica })
      .where('id', '=', id)
      .where('state', '=', 'pending')
      .where('expires_ms', '>', this.#now())
      .executeTakeFirst();
    if (Number(u.numUpdatedRows) === 0) return undefined;
    return this.get(id);
  }

  async claimFor(deviceId: string, clientId: string | null, replica: string): Promise<PushMessage[]> {
    const q = this.#w.db
      .selectFrom('push_messages')
      .select('id')
      .where('device_id', '=', deviceId)
      .where('state', '=', 'pending')
      .where('expires_ms', '>', this.#now());
    const rows = await q
      .where(ofPair(clientId?.toLowerCase() ?? null))
      .orderBy('created_ms')
      .orderBy('id')
      .limit(1000)
      .execute();
    const out: PushMessage[] = [];
    for (const r of rows) {
      const m = await this.claim(r.id, replica);
      if (m) out.push(m);
    }
    return out;
  }

  async finish(id: string, state: DeliveredState): Promise<void> {
    await this.#w.write(async (trx, changed) => {
      const row = await trx.selectFrom('push_messages').select('device_id').where('id', '=', id).executeTakeFirst();
      if (!row) return;
      await trx.updateTable('push_messages').set({ state }).where('id', '=', id).execute();
      changed({ kind: 'push', id, deviceId: row.device_id });
    });
  }

  async cancel(id: string): Promise<boolean> {
    const u = await this.#w.db
      .updateTable('push_messages')
      .set({ state: 'cancelled' })
      .where('id', '=', id)
      .where('state', '=', 'pending')
      .executeTakeFirst();
    return Number(u.numUpdatedRows) > 0;
  }

  async release(id: string): Promise<void> {
    await this.#w.db
      .updateTable('push_messages')
      .set({ state: 'pending', claimed_by: null })
      .where('id', '=', id)
      .where('state', '=', 'claimed')
      .execute();
  }

  async releaseOrphaned(replica: string): Promise<number> {
    const alive = this.#w.db
      .selectFrom('replicas')
      .select('replica')
      .where('heartbeat_ms', '>=', this.#now() - REPLICA_TIMEOUT_MS);
    const u = await this.#w.db
      .updateTable('push_messages')
      .set({ state: 'pending', claimed_by: null })
      .where('state', '=', 'claimed')
      .where('claimed_by', '<>', replica)
      .where('claimed_by', 'not in', alive)
      .where('expires_ms', '>', this.#now())
      .executeTakeFirst();
    return Number(u.numUpdatedRows);
  }

  async othersAlive(replica: string): Promise<boolean> {
    const row = await this.#w.db
      .selectFrom('replicas')
      .select('replica')
      .where('replica', '<>', replica)
      .where('heartbeat_ms', '>=', this.#now() - REPLICA_TIMEOUT_MS)
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }
}
