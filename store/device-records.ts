/**
 * @module Every device the server has seen (OTA or a session), bound or not: its pair, alias,
 * agent, board and firmware, first and last seen. Bounded: past MAX_RECORDS a new device replaces
 * the longest-unseen one that nobody named (no alias, no agent, not bound); when every record is
 * named, a new device is not recorded. A request claiming a bound MAC with another Client-Id does
 * not touch that device's record.
 */
import type { Kysely } from 'kysely';
import { ClientIdSchema, DeviceIdSchema } from '../protocol/ota.ts';
import type { Database, DevicesTable } from './schema.ts';
import type { DeviceRecord } from './types.ts';
import type { CacheState } from './store-cache.ts';
import type { Writer } from './writer.ts';
import type { WriteQueue } from './write-batcher.ts';

export const MAX_RECORDS = 10_000;
/** Longest board name, firmware version or alias stored. */
export const MAX_LABEL_CHARS = 100;

export interface DeviceRecords {
  list(): Promise<DeviceRecord[]>;
  get(deviceId: string): Promise<DeviceRecord | undefined>;
  /**
   * Upsert from OTA or a session: first seen kept, last seen bumped; board/firmware when given.
   * Bounded. Queued, stored with the next tick's batch: the promise resolves once that was
   * attempted (the hot path does not wait for it).
   */
  seen(r: { deviceId: string; clientId: string; board?: string | null; firmware?: string | null }): Promise<void>;
  update(deviceId: string, patch: { agent?: string | null; alias?: string | null }): Promise<DeviceRecord | undefined>;
}

/** A device seen, queued for the next batch (`deferred-writes.ts`). */
export interface SeenWrite {
  kind: 'seen';
  deviceId: string;
  clientId: string;
  at: string;
  board?: string | null;
  firmware?: string | null;
}

export function recordFromRow(row: DevicesTable): DeviceRecord {
  return {
    deviceId: row.device_id,
    clientId: row.client_id,
    alias: row.alias,
    agent: row.agent,
    board: row.board,
    firmware: row.firmware,
    firstSeen: row.first_seen,
    lastSeen: row.last_seen,
  };
}

const label = (v: string | null | undefined): string | null | undefined =>
  typeof v === 'string' ? v.slice(0, MAX_LABEL_CHARS) : v;

export class StoreDeviceRecords implements DeviceRecords {
  readonly #w: Writer;
  readonly #cache: CacheState;
  readonly #deferred: WriteQueue<SeenWrite>;
  readonly #now: () => number;

  constructor(writer: Writer, cache: CacheState, deferred: WriteQueue<SeenWrite>, now: () => number = Date.now) {
    this.#w = writer;
    this.#cache = cache;
    this.#deferred = deferred;
    this.#now = now;
  }

  async list(): Promise<DeviceRecord[]> {
    // The admin's view: what this process saw a moment ago is in it.
    await this.#deferred.flush();
    const rows = await this.#w.db
      .selectFrom('devices')
      .selectAll()
      .orderBy('last_seen', 'desc')
      .orderBy('device_id')
      .execute();
    return rows.map(recordFromRow);
  }

  async get(rawDeviceId: string): Promise<DeviceRecord | undefined> {
    const id = DeviceIdSchema.safeParse(rawDeviceId);
    if (!id.success) return undefined;
    // Asked by the admin API and `say` (not the hot path): a device seen a moment ago is known.
    await this.#deferred.flush();
    const row = await this.#w.db.selectFrom('devices').selectAll().where('device_id', '=', id.data).executeTakeFirst();
    return row ? recordFromRow(row) : undefined;
  }

  seen(r: { deviceId: string; clientId: string; board?: string | null; firmware?: string | null }): Promise<void> {
    const d = DeviceIdSchema.safeParse(r.deviceId);
    const c = ClientIdSchema.safeParse(r.clientId);
    if (!d.success || !c.success) return Promise.resolve();
    const deviceId = d.data;
    const clientId = c.data;
    // Someone else claiming a bound MAC: the bound device's record stays as it is.
    const bound = this.#cache.bindingsOf(deviceId);
    if (bound.length > 0 && !bound.some((b) => b.clientId === clientId)) return Promise.resolve();
    const at = new Date(this.#now()).toISOString();
    this.#deferred.add([
      {
        kind: 'seen',
        deviceId,
        clientId,
        at,
        ...(r.board !== undefined ? { board: label(r.board) ?? null } : {}),
        ...(r.firmware !== undefined ? { firmware: label(r.firmware) ?? null } : {}),
      },
    ]);
    return this.#deferred.settled();
  }

  async update(
    rawDeviceId: string,
    patch: { agent?: string | null; alias?: string | null },
  ): Promise<DeviceRecord | undefined> {
    const id = DeviceIdSchema.safeParse(rawDeviceId);
    if (!id.success) return undefined;
    const deviceId = id.data;
    const set = {
      ...(patch.agent !== undefined ? { agent: patch.agent } : {}),
      ...(patch.alias !== undefined ? { alias: label(patch.alias) ?? null } : {}),
    };
    const found = await this.#w.write(async (trx, changed) => {
      const row = await trx
        .selectFrom('devices')
        .select('device_id')
        .where('device_id', '=', deviceId)
        .executeTakeFirst();
      if (!row) return false;
      if (Object.keys(set).length > 0) {
        await trx.updateTable('devices').set(set).where('device_id', '=', deviceId).execute();
        changed({ kind: 'device', deviceId });
      }
      return true;
    });
    return found ? this.get(deviceId) : undefined;
  }
}

/** Stores one queued sighting inside the batch's transaction. */
export async function writeSeen(trx: Kysely<Database>, w: SeenWrite): Promise<void> {
  const patch = {
    client_id: w.clientId,
    last_seen: w.at,
    ...(w.board !== undefined ? { board: w.board } : {}),
    ...(w.firmware !== undefined ? { firmware: w.firmware } : {}),
  };
  const updated = await trx.updateTable('devices').set(patch).where('device_id', '=', w.deviceId).executeTakeFirst();
  if (Number(updated.numUpdatedRows) > 0) return;
  if (!(await makeRoom(trx))) return;
  await trx
    .insertInto('devices')
    .values({
      device_id: w.deviceId,
      alias: null,
      agent: null,
      board: null,
      firmware: null,
      first_seen: w.at,
      ...patch,
    })
    .onConflict((oc) => oc.column('device_id').doUpdateSet(patch))
    .execute();
}

/** Room for one more record: false when the table is full of named devices. */
async function makeRoom(trx: Kysely<Database>): Promise<boolean> {
  const count = await trx
    .selectFrom('devices')
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  if (Number(count.n) < MAX_RECORDS) return true;
  const victim = await trx
    .selectFrom('devices')
    .select('device_id')
    .where('agent', 'is', null)
    .where('alias', 'is', null)
    .where('device_id', 'not in', (eb) => eb.selectFrom('bindings').select('device_id'))
    .orderBy('last_seen', 'asc')
    .limit(1)
    .executeTakeFirst();
  if (!victim) return false;
  await trx.deleteFrom('devices').where('device_id', '=', victim.device_id).execute();
  return true;
}
