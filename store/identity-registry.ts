/**
 * @module The device registry on the store: bindings, pending spoken codes, the token secret.
 * Sizes are bounded: at most MAX_BOUND bindings and MAX_PENDING codes, each expiring; each source
 * address holds at most its budget of codes, and a new pair from a source at its budget replaces
 * that source's oldest code, so one address inventing identities cannot crowd the real devices
 * of other addresses out. A full table still gives a new device a code: the oldest code of the
 * source holding the most goes (many addresses each at their budget, a fleet behind carrier NAT,
 * lose their oldest before a lone device loses its one). From half full on, codes live a shorter
 * lifetime, so abandoned ones make room sooner. Only well-formed identities are stored.
 */
import { createHash, randomInt } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import { ClientIdSchema, DeviceIdSchema } from '../protocol/ota.ts';
import type { Database } from './schema.ts';
import type { BindResult, BoundDevice, DeviceRegistry, IssuedCode, PendingCode } from './identity-registry-types.ts';
import type { CacheState } from './store-cache.ts';
import { boundFromRow } from './store-cache.ts';
import type { Writer } from './writer.ts';
import { nextGeneration } from './identity-settings.ts';
import { pairKey } from './pair-key.ts';
import { deleteMemoryRows } from './memory.ts';
import { deleteReminderRows } from './reminders.ts';

export const MAX_BOUND = 10_000;
export const MAX_PENDING = 100;
/** From this many pending codes on, codes live the pressure lifetime (see `pressureTtlMs`). */
export const PRESSURE_AT = MAX_PENDING / 2;

/** A code's lifetime under pressure: a fifth of `codeTtlMs`, at least a minute (to read it out and bind), never more than `codeTtlMs`. */
export function pressureTtlMs(codeTtlMs: number): number {
  return Math.min(codeTtlMs, Math.max(60_000, Math.round(codeTtlMs / 5)));
}

/** The code to drop from a full table: the oldest of the source holding the most (ties: the source whose oldest is oldest). */
function oldestOfBusiest(
  rows: ReadonlyArray<{ code: string; source: string; generation: number | string }>,
): string | undefined {
  const bySource = new Map<string, { n: number; oldest: { code: string; generation: number } }>();
  for (const r of rows) {
    const g = Number(r.generation);
    const s = bySource.get(r.source);
    if (!s) bySource.set(r.source, { n: 1, oldest: { code: r.code, generation: g } });
    else {
      s.n++;
      if (g < s.oldest.generation) s.oldest = { code: r.code, generation: g };
    }
  }
  let best: { n: number; oldest: { code: string; generation: number } } | undefined;
  for (const s of bySource.values()) {
    if (!best || s.n > best.n || (s.n === best.n && s.oldest.generation < best.oldest.generation)) best = s;
  }
  return best?.oldest.code;
}
/** Longest source address key stored (an IPv6 address with a zone fits). */
export const MAX_SOURCE_CHARS = 64;
/** PostgreSQL: code issuance is serialised across replicas by this advisory lock. */
const PENDING_LOCK = 0x78_69_61_6f;

export function bindingId(deviceId: string, clientId: string): string {
  return createHash('sha256').update(pairKey(deviceId, clientId)).digest('hex').slice(0, 10);
}

function pendingFromRow(row: {
  code: string;
  device_id: string;
  client_id: string;
  expires_ms: number | string;
  generation: number | string;
}): PendingCode {
  return {
    code: row.code,
    deviceId: row.device_id,
    clientId: row.client_id,
    expiresAt: Number(row.expires_ms),
    generation: Number(row.generation),
  };
}

export interface RegistryOptions {
  writer: Writer;
  cache: CacheState;
  secret: string;
  codeTtlMs: number;
  /** Pending codes one source address may hold. */
  pendingPerSource: number;
  now?: () => number;
}

export class StoreDeviceRegistry implements DeviceRegistry {
  readonly #w: Writer;
  readonly #cache: CacheState;
  readonly #secret: string;
  readonly #ttl: number;
  readonly #pressureTtl: number;
  readonly #perSource: number;
  readonly #now: () => number;

  constructor(opts: RegistryOptions) {
    this.#w = opts.writer;
    this.#cache = opts.cache;
    this.#secret = opts.secret;
    this.#ttl = opts.codeTtlMs;
    this.#pressureTtl = pressureTtlMs(opts.codeTtlMs);
    this.#perSource = Math.max(1, opts.pendingPerSource);
    this.#now = opts.now ?? Date.now;
  }

  secret(): string {
    return this.#secret;
  }

  isBound(deviceId: string, clientId: string): boolean {
    return this.#cache.binding(deviceId, clientId) !== undefined;
  }

  binding(deviceId: string, clientId: string): BoundDevice | undefined {
    return this.#cache.binding(deviceId, clientId);
  }

  async storedBinding(deviceId: string, clientId: string): Promise<BoundDevice | undefined> {
    const row = await this.#w.db
      .selectFrom('bindings')
      .selectAll()
      .where('device_id', '=', deviceId.toLowerCase())
      .where('client_id', '=', clientId.toLowerCase())
      .executeTakeFirst();
    return row ? boundFromRow(row) : undefined;
  }

  async pendingCode(rawDeviceId: string, rawClientId: string, rawSource: string): Promise<IssuedCode | null> {
    const d = DeviceIdSchema.safeParse(rawDeviceId);
    const c = ClientIdSchema.safeParse(rawClientId);
    if (!d.success || !c.success) return null;
    const deviceId = d.data;
    const clientId = c.data;
    const source = rawSource.slice(0, MAX_SOURCE_CHARS);
    const now = this.#now();
    // A pair already waiting is answered by a read alone (the firmware asks again after every poll).
    const live = await this.#w.db
      .selectFrom('pending_codes')
      .selectAll()
      .where('device_id', '=', deviceId)
      .where('client_id', '=', clientId)
      .where('expires_ms', '>', now)
      .executeTakeFirst();
    if (live) return { ...pendingFromRow(live), created: false };
    return this.#w.write(async (trx) => {
      if (this.#w.dialect === 'postgres') await sql`select pg_advisory_xact_lock(${PENDING_LOCK})`.execute(trx);
      await trx.deleteFrom('pending_codes').where('expires_ms', '<=', now).execute();
      const mine = await trx
        .selectFrom('pending_codes')
        .selectAll()
        .where('device_id', '=', deviceId)
        .where('client_id', '=', clientId)
        .executeTakeFirst();
      if (mine) return { ...pendingFromRow(mine), created: false };
      // At most MAX_PENDING rows: what follows is decided on all of them at once.
      let rows = await trx.selectFrom('pending_codes').select(['code', 'source', 'generation', 'created_ms']).execute();
      const pressed = rows.length >= PRESSURE_AT;
      if (pressed) {
        // Under pressure every code lives the shorter lifetime, so abandoned ones make room sooner.
        const cut = this.#pressureTtl;
        await trx
          .updateTable('pending_codes')
          .set({ expires_ms: sql<number>`created_ms + ${cut}` })
          .where(sql<boolean>`expires_ms > created_ms + ${cut}`)
          .execute();
        const expired = rows.filter((r) => Number(r.created_ms) + cut <= now).map((r) => r.code);
        if (expired.length > 0) await trx.deleteFrom('pending_codes').where('code', 'in', expired).execute();
        rows = rows.filter((r) => !expired.includes(r.code));
      }
      // This source at its budget: its own oldest codes make room (generations only grow).
      const ofSource = rows
        .filter((r) => r.source === source)
        .sort((a, b) => Number(a.generation) - Number(b.generation));
      const excess = ofSource.slice(0, Math.max(0, ofSource.length - this.#perSource + 1)).map((r) => r.code);
      rows = rows.filter((r) => !excess.includes(r.code));
      // Still full: the oldest code of the busiest source goes, so a new device always gets one.
      const victim = rows.length >= MAX_PENDING ? oldestOfBusiest(rows) : undefined;
      const gone = victim === undefined ? excess : [...excess, victim];
      if (gone.length > 0) await trx.deleteFrom('pending_codes').where('code', 'in', gone).execute();
      const used = new Set(rows.map((r) => r.code).filter((c) => c !== victim));
      let code: string;
      do code = String(randomInt(0, 1_000_000)).padStart(6, '0');
      while (used.has(code));
      // The generation the binding by this code will have: never one an earlier binding had.
      const generation = await nextGeneration(trx);
      const made: PendingCode = {
        code,
        deviceId,
        clientId,
        expiresAt: now + (pressed ? this.#pressureTtl : this.#ttl),
        generation,
      };
      await trx
        .insertInto('pending_codes')
        .values({
          code,
          device_id: deviceId,
          client_id: clientId,
          source,
          expires_ms: made.expiresAt,
          created_ms: now,
          generation,
        })
        .execute();
      return { ...made, created: true };
    });
  }

  async bind(rawCode: string, opts: { agent?: string; alias?: string } = {}): Promise<BindResult> {
    const code = rawCode.trim();
    if (!/^\d{6}$/.test(code)) return { ok: false, reason: 'unknown or expired code' };
    const now = this.#now();
    return this.#w.write(async (trx, changed): Promise<BindResult> => {
      const p = await trx
        .selectFrom('pending_codes')
        .selectAll()
        .where('code', '=', code)
        .where('expires_ms', '>', now)
        .executeTakeFirst();
      if (!p) return { ok: false, reason: 'unknown or expired code' };
      const id = bindingId(p.device_id, p.client_id);
      const existing = await trx.selectFrom('bindings').select('id').where('id', '=', id).executeTakeFirst();
      if (!existing) {
        const count = await trx
          .selectFrom('bindings')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow();
        if (Number(count.n) >= MAX_BOUND) return { ok: false, reason: 'registry full' };
      }
      // The code's generation, whose token OTA handed out with the code.
      const device: BoundDevice = {
        id,
        deviceId: p.device_id,
        clientId: p.client_id,
        boundAt: new Date(now).toISOString(),
        generation: Number(p.generation),
      };
      await trx.deleteFrom('bindings').where('id', '=', id).execute();
      await trx
        .insertInto('bindings')
        .values({
          id,
          device_id: device.deviceId,
          client_id: device.clientId,
          bound_at: device.boundAt,
          generation: device.generation,
        })
        .execute();
      await trx.deleteFrom('pending_codes').where('code', '=', code).execute();
      changed({ kind: 'binding', deviceId: device.deviceId, clientId: device.clientId });
      await upsertBoundRecord(trx, device, opts, now);
      changed({ kind: 'device', deviceId: device.deviceId });
      return { ok: true, device };
    });
  }

  async list(): Promise<{ bound: BoundDevice[]; pending: PendingCode[] }> {
    const now = this.#now();
    const [bound, pending] = await Promise.all([
      this.#w.db.selectFrom('bindings').selectAll().orderBy('bound_at').orderBy('id').execute(),
      this.#w.db.selectFrom('pending_codes').selectAll().where('expires_ms', '>', now).orderBy('created_ms').execute(),
    ]);
    return { bound: bound.map(boundFromRow), pending: pending.map(pendingFromRow) };
  }

  async revoke(idOrDevice: string): Promise<BoundDevice[]> {
    const needle = idOrDevice.trim().toLowerCase();
    if (!needle || needle.length > 64) return [];
    return this.#w.write(async (trx, changed) => {
      const rows = await trx
        .selectFrom('bindings')
        .selectAll()
        .where((eb) => eb.or([eb('id', '=', needle), eb('device_id', '=', needle), eb('client_id', '=', needle)]))
        .execute();
      if (rows.length === 0) return [];
      await trx
        .deleteFrom('bindings')
        .where(
          'id',
          'in',
          rows.map((r) => r.id),
        )
        .execute();
      // A revoked device's memory and reminders go with its binding.
      await deleteMemoryRows(
        trx,
        rows.map((r) => r.device_id),
      );
      await deleteReminderRows(
        trx,
        rows.map((r) => r.device_id),
      );
      for (const r of rows) changed({ kind: 'memory', deviceId: r.device_id });
      for (const r of rows) changed({ kind: 'binding', deviceId: r.device_id, clientId: r.client_id });
      return rows.map(boundFromRow);
    });
  }

  onBound(listener: (devices: BoundDevice[]) => void): void {
    this.#cache.onBound(listener);
  }

  onRevoked(listener: (devices: BoundDevice[]) => void): void {
    this.#cache.onRevoked(listener);
  }
}

/** The bound pair's device record: created or updated to this Client-Id, with the agent and alias given at binding. */
async function upsertBoundRecord(
  trx: Kysely<Database>,
  device: BoundDevice,
  opts: { agent?: string; alias?: string },
  now: number,
): Promise<void> {
  const at = new Date(now).toISOString();
  const patch = {
    client_id: device.clientId,
    ...(opts.agent !== undefined ? { agent: opts.agent } : {}),
    ...(opts.alias !== undefined ? { alias: opts.alias.slice(0, 100) } : {}),
  };
  await trx
    .insertInto('devices')
    .values({
      device_id: device.deviceId,
      alias: null,
      agent: null,
      board: null,
      firmware: null,
      first_seen: at,
      last_seen: at,
      ...patch,
    })
    .onConflict((oc) => oc.column('device_id').doUpdateSet(patch))
    .execute();
}
