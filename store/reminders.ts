/**
 * @module Reminders the model sets for a device: kept in the database until delivered, so they
 * survive restarts and any replica may fire them. A due row is claimed by one conditional UPDATE
 * (`state = 'pending'` → `firing`), so with several replicas polling exactly one fires it; a
 * delivered row is deleted, a failed delivery puts it back for a later try, and a claim left by a
 * replica that died is given back after a while. Each reminder belongs to the identity pair
 * (Device-Id + Client-Id) that set it: it is listed, cancelled and spoken there only, and each pair
 * holds a bounded number.
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from './schema.ts';
import type { Writer } from './writer.ts';
import { cut } from './text-cut.ts';
import { pairKey } from './pair-key.ts';

/** Characters kept of one reminder's text. */
export const MAX_REMINDER_CHARS = 200;
/**
 * Reminders the whole store holds at most: with open auth any MAC may talk, so the per-device
 * bound alone would not bound the table.
 */
export const MAX_REMINDERS_TOTAL = 100_000;

/** Advisory lock class of the per-pair count (PostgreSQL), so two adds cannot both pass the bound. */
const REMINDER_LOCK = 0x52454d; // 'REM'

export interface Reminder {
  id: number;
  deviceId: string;
  /** The pair's Client-Id (lower case): it was set there and is spoken there. */
  clientId: string;
  agent: string | null;
  text: string;
  /** When it is due, ms since the epoch. */
  dueMs: number;
  /** `pending`, or `firing` while a replica delivers it. */
  state: 'pending' | 'firing';
  createdAt: string;
}

/** Why a reminder was not stored: the pair holds its most, or the whole store does. */
export type Refused = 'full' | 'store_full';

export interface NewReminder {
  deviceId: string;
  clientId: string;
  agent: string | null;
  text: string;
  dueMs: number;
}

export interface RemindersStore {
  /** Stores a reminder unless its pair already holds `maxPerPair` (`full`) or the store `maxTotal` (`store_full`, default MAX_REMINDERS_TOTAL). */
  add(r: NewReminder, maxPerPair: number, maxTotal?: number): Promise<Reminder | Refused>;
  /** The reminders of one pair of the device (`clientId`), or of every pair (the admin's view), soonest first. */
  list(deviceId: string, clientId?: string): Promise<Reminder[]>;
  /** Removes one reminder of the device (of its pair `clientId` only, when given); false when it has none with that id. */
  cancel(deviceId: string, id: number, clientId?: string): Promise<boolean>;
  /** Pending reminders whose time to try has come, soonest first. */
  due(now: number, limit: number): Promise<Reminder[]>;
  /** Marks a pending reminder as being fired by `replica`; false when another took it (or it is gone). */
  claim(id: number, replica: string, now: number): Promise<boolean>;
  /** The claimed reminder was delivered: removed. */
  delivered(id: number, replica: string): Promise<void>;
  /** The claimed reminder could not be delivered: pending again, tried at `nextMs`. */
  release(id: number, replica: string, nextMs: number): Promise<void>;
  /** Claims older than `before` (their replica died while firing) made pending again; how many. */
  releaseAbandoned(before: number): Promise<number>;
  /** Removes every reminder of the device. */
  deleteDevice(deviceId: string): Promise<void>;
}

const key = (deviceId: string): string => deviceId.toLowerCase();

type Row = {
  id: number | string;
  device_id: string;
  client_id: string;
  agent: string | null;
  text: string;
  due_ms: number | string;
  state: string;
  created_at: string;
};

function reminderOf(r: Row): Reminder {
  return {
    id: Number(r.id),
    deviceId: r.device_id,
    clientId: r.client_id,
    agent: r.agent,
    text: r.text,
    dueMs: Number(r.due_ms),
    state: r.state === 'firing' ? 'firing' : 'pending',
    createdAt: r.created_at,
  };
}

const COLUMNS = ['id', 'device_id', 'client_id', 'agent', 'text', 'due_ms', 'state', 'created_at'] as const;

/** Gives the reminders of pair `from` to pair `to` inside a transaction (the operator moves a device's memory); how many. */
export async function moveReminderRows(
  trx: Kysely<Database>,
  deviceId: string,
  from: string,
  to: string,
): Promise<number> {
  const r = await trx
    .updateTable('reminders')
    .set({ client_id: to })
    .where('device_id', '=', key(deviceId))
    .where('client_id', '=', from)
    .executeTakeFirst();
  return Number(r.numUpdatedRows);
}

/** Deletes every reminder of the devices inside a transaction (a revoke). */
export async function deleteReminderRows(trx: Kysely<Database>, deviceIds: readonly string[]): Promise<void> {
  if (deviceIds.length === 0) return;
  await trx.deleteFrom('reminders').where('device_id', 'in', deviceIds.map(key)).execute();
}

export class StoreReminders implements RemindersStore {
  readonly #w: Writer;
  readonly #db: Kysely<Database>;
  readonly #now: () => number;

  constructor(writer: Writer, now: () => number) {
    this.#w = writer;
    this.#db = writer.db;
    this.#now = now;
  }

  async add(r: NewReminder, maxPerPair: number, maxTotal = MAX_REMINDERS_TOTAL): Promise<Reminder | Refused> {
    const deviceId = key(r.deviceId);
    const clientId = r.clientId.toLowerCase();
    const text = cut(r.text.trim(), MAX_REMINDER_CHARS);
    const createdAt = new Date(this.#now()).toISOString();
    return this.#w.write(async (trx): Promise<Reminder | Refused> => {
      if (this.#w.dialect === 'postgres')
        await sql`select pg_advisory_xact_lock(${REMINDER_LOCK}, hashtext(${pairKey(deviceId, clientId)}))`.execute(
          trx,
        );
      const held = await trx
        .selectFrom('reminders')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('device_id', '=', deviceId)
        .where('client_id', '=', clientId)
        .executeTakeFirstOrThrow();
      if (Number(held.n) >= maxPerPair) return 'full';
      const all = await trx
        .selectFrom('reminders')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow();
      if (Number(all.n) >= maxTotal) return 'store_full';
      const row = await trx
        .insertInto('reminders')
        .values({
          device_id: deviceId,
          client_id: clientId,
          agent: r.agent,
          text,
          due_ms: r.dueMs,
          next_ms: r.dueMs,
          state: 'pending',
          claimed_by: null,
          claimed_ms: null,
          created_at: createdAt,
        })
        .returning(COLUMNS)
        .executeTakeFirstOrThrow();
      return reminderOf(row);
    });
  }

  async list(deviceId: string, clientId?: string): Promise<Reminder[]> {
    let q = this.#db.selectFrom('reminders').select(COLUMNS).where('device_id', '=', key(deviceId));
    if (clientId !== undefined) q = q.where('client_id', '=', clientId.toLowerCase());
    const rows = await q.orderBy('due_ms').orderBy('id').execute();
    return rows.map(reminderOf);
  }

  async cancel(deviceId: string, id: number, clientId?: string): Promise<boolean> {
    let q = this.#db.deleteFrom('reminders').where('id', '=', id).where('device_id', '=', key(deviceId));
    if (clientId !== undefined) q = q.where('client_id', '=', clientId.toLowerCase());
    const r = await q.executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  async due(now: number, limit: number): Promise<Reminder[]> {
    const rows = await this.#db
      .selectFrom('reminders')
      .select(COLUMNS)
      .where('state', '=', 'pending')
      .where('next_ms', '<=', now)
      .orderBy('next_ms')
      .limit(limit)
      .execute();
    return rows.map(reminderOf);
  }

  async claim(id: number, replica: string, now: number): Promise<boolean> {
    const r = await this.#db
      .updateTable('reminders')
      .set({ state: 'firing', claimed_by: replica, claimed_ms: now })
      .where('id', '=', id)
      .where('state', '=', 'pending')
      // Still due: another replica may have put it back for a later try since it was read.
      .where('next_ms', '<=', now)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  async delivered(id: number, replica: string): Promise<void> {
    await this.#db.deleteFrom('reminders').where('id', '=', id).where('claimed_by', '=', replica).execute();
  }

  async release(id: number, replica: string, nextMs: number): Promise<void> {
    await this.#db
      .updateTable('reminders')
      .set({ state: 'pending', claimed_by: null, claimed_ms: null, next_ms: nextMs })
      .where('id', '=', id)
      .where('state', '=', 'firing')
      .where('claimed_by', '=', replica)
      .execute();
  }

  async releaseAbandoned(before: number): Promise<number> {
    const r = await this.#db
      .updateTable('reminders')
      .set({ state: 'pending', claimed_by: null, claimed_ms: null })
      .where('state', '=', 'firing')
      .where('claimed_ms', '<', before)
      .executeTakeFirst();
    return Number(r.numUpdatedRows);
  }

  async deleteDevice(deviceId: string): Promise<void> {
    await this.#db.deleteFrom('reminders').where('device_id', '=', key(deviceId)).execute();
  }
}
