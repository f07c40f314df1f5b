/**
 * @module At start: rows that should not be there (identities that are not well formed, oversized
 * values written by hand or by an older version, more pending codes than the cap) are deleted,
 * with one warning saying how many, so a database that somehow holds them still starts and stays
 * bounded. Lengths are checked in SQL first, so a huge value is never read into memory.
 */
import { sql, type Kysely } from 'kysely';
import { ClientIdSchema, DeviceIdSchema, MAX_CLIENT_ID_CHARS } from '../protocol/ota.ts';
import type { Logger } from '../core/logger.ts';
import type { Database } from './schema.ts';
import { MAX_PENDING } from './identity-registry.ts';
import { MAX_LABEL_CHARS } from './device-records.ts';

const wellFormed = (deviceId: string, clientId: string): boolean => {
  const d = DeviceIdSchema.safeParse(deviceId);
  const c = ClientIdSchema.safeParse(clientId);
  return d.success && c.success && d.data === deviceId && c.data === clientId;
};

/** Deletes malformed rows; returns how many went. */
export async function purgeBadRows(db: Kysely<Database>, log: Logger, where: string): Promise<number> {
  let dropped = 0;
  const count = (r: { numDeletedRows: bigint }[]): number => r.reduce((n, x) => n + Number(x.numDeletedRows), 0);
  dropped += count(
    await db
      .deleteFrom('bindings')
      .where(
        sql<boolean>`length(id) <> 10 or length(device_id) <> 17 or length(client_id) < 1 or length(client_id) > ${MAX_CLIENT_ID_CHARS} or length(bound_at) > 40`,
      )
      .execute(),
  );
  const bindings = await db.selectFrom('bindings').select(['id', 'device_id', 'client_id']).execute();
  const badBindings = bindings
    .filter((b) => !/^[0-9a-f]{10}$/.test(b.id) || !wellFormed(b.device_id, b.client_id))
    .map((b) => b.id);
  if (badBindings.length > 0)
    dropped += count(await db.deleteFrom('bindings').where('id', 'in', badBindings).execute());

  dropped += count(
    await db
      .deleteFrom('pending_codes')
      .where(
        sql<boolean>`length(code) <> 6 or length(device_id) <> 17 or length(client_id) < 1 or length(client_id) > ${MAX_CLIENT_ID_CHARS} or length(source) > 64`,
      )
      .execute(),
  );
  const pending = await db
    .selectFrom('pending_codes')
    .select(['code', 'device_id', 'client_id'])
    .orderBy('expires_ms', 'desc')
    .execute();
  const badPending = pending
    .filter((p) => !/^\d{6}$/.test(p.code) || !wellFormed(p.device_id, p.client_id))
    .map((p) => p.code);
  // More than may be pending: the codes expiring last are kept.
  const excess = pending
    .filter((p) => !badPending.includes(p.code))
    .slice(MAX_PENDING)
    .map((p) => p.code);
  const goPending = [...badPending, ...excess];
  if (goPending.length > 0)
    dropped += count(await db.deleteFrom('pending_codes').where('code', 'in', goPending).execute());

  dropped += count(
    await db
      .deleteFrom('devices')
      .where(sql<boolean>`length(device_id) <> 17 or length(client_id) > ${MAX_CLIENT_ID_CHARS}`)
      .execute(),
  );
  const devices = await db.selectFrom('devices').select(['device_id', 'client_id']).execute();
  const badDevices = devices
    .filter(
      (d) =>
        !DeviceIdSchema.safeParse(d.device_id).success || (d.client_id !== '' && !wellFormed(d.device_id, d.client_id)),
    )
    .map((d) => d.device_id);
  if (badDevices.length > 0)
    dropped += count(await db.deleteFrom('devices').where('device_id', 'in', badDevices).execute());
  for (const column of ['alias', 'board', 'firmware'] as const) {
    await db
      .updateTable('devices')
      .set({ [column]: sql`substr(${sql.ref(column)}, 1, ${MAX_LABEL_CHARS})` })
      .where(sql<boolean>`length(${sql.ref(column)}) > ${MAX_LABEL_CHARS}`)
      .execute();
  }
  if (dropped > 0)
    log.warn(
      { database: where, dropped, kept: bindings.length - badBindings.length },
      'store: malformed or excess rows purged',
    );
  return dropped;
}
