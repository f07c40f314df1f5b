/**
 * @module The one-time import of the registry file earlier versions kept (`devices.json` in the
 * data directory): at the first start with an empty database, its secret (so every token keeps
 * working), generation counter, bindings and pending codes move into the store, the file is
 * renamed `devices.json.imported`, and the log says so. Rows that are not well formed are left
 * out (counted in the log); a file that cannot be read is left in place with an error.
 */
import { readFileSync, renameSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import type { Kysely } from 'kysely';
import { ClientIdSchema, DeviceIdSchema } from '../protocol/ota.ts';
import type { Logger } from '../core/logger.ts';
import type { Database } from './schema.ts';
import { MAX_BOUND, MAX_PENDING } from './identity-registry.ts';

export const LEGACY_FILE = 'devices.json';
/** Past this the file is not read at all (the old server refused files past 8 MB already). */
const MAX_IMPORT_BYTES = 256 * 1024 * 1024;

const GenerationSchema = z.number().int().nonnegative().default(0);
const BoundRowSchema = z.object({
  id: z.string().regex(/^[0-9a-f]{10}$/),
  deviceId: DeviceIdSchema,
  clientId: ClientIdSchema,
  boundAt: z.string().max(40),
  generation: GenerationSchema,
});
const PendingRowSchema = z.object({
  code: z.string().regex(/^\d{6}$/),
  deviceId: DeviceIdSchema,
  clientId: ClientIdSchema,
  expiresAt: z.number(),
  generation: GenerationSchema,
});
const FileSchema = z.object({
  version: z.literal(1),
  secret: z.string().min(32).max(1000),
  generation: GenerationSchema,
  devices: z.array(z.unknown()),
  pending: z.array(z.unknown()),
});

function rows<T>(schema: z.ZodType<T>, list: unknown[]): T[] {
  return list.flatMap((row) => {
    const r = schema.safeParse(row);
    return r.success ? [r.data] : [];
  });
}

/** Imports `<dataDir>/devices.json` when it exists; returns whether it did. Call only on an empty database. */
export async function importLegacyRegistry(
  db: Kysely<Database>,
  dataDir: string,
  log: Logger,
  now = Date.now(),
): Promise<boolean> {
  const file = join(dataDir, LEGACY_FILE);
  let text: string;
  try {
    const size = statSync(file).size;
    if (size > MAX_IMPORT_BYTES) {
      log.error(
        { file, bytes: size },
        'store: the old device registry is too large to import; left in place (devices must be activated again)',
      );
      return false;
    }
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
  let parsed;
  try {
    parsed = FileSchema.safeParse(JSON.parse(text));
  } catch (err) {
    log.error(
      { file, err: (err as Error).message.slice(0, 200) },
      'store: the old device registry is not valid JSON; left in place, not imported',
    );
    return false;
  }
  if (!parsed.success) {
    log.error(
      { file, issue: parsed.error.issues[0]?.message },
      'store: the old device registry is not a registry; left in place, not imported',
    );
    return false;
  }
  const f = parsed.data;
  const bound = rows(BoundRowSchema, f.devices).slice(0, MAX_BOUND);
  const pending = rows(PendingRowSchema, f.pending)
    .filter((p) => p.expiresAt > now)
    .sort((a, b) => b.expiresAt - a.expiresAt)
    .slice(0, MAX_PENDING);
  const generation = Math.max(f.generation, ...bound.map((d) => d.generation), ...pending.map((p) => p.generation));
  await db.transaction().execute(async (trx) => {
    await trx
      .insertInto('settings')
      .values([
        { key: 'token_secret', value: f.secret },
        { key: 'generation', value: String(generation) },
      ])
      .execute();
    const seenPairs = new Set<string>();
    for (const d of bound) {
      if (seenPairs.has(d.id)) continue;
      seenPairs.add(d.id);
      await trx
        .insertInto('bindings')
        .values({
          id: d.id,
          device_id: d.deviceId,
          client_id: d.clientId,
          bound_at: d.boundAt,
          generation: d.generation,
        })
        .execute();
      await trx
        .insertInto('devices')
        .values({
          device_id: d.deviceId,
          client_id: d.clientId,
          alias: null,
          agent: null,
          board: null,
          firmware: null,
          first_seen: d.boundAt,
          last_seen: d.boundAt,
        })
        .onConflict((oc) => oc.column('device_id').doNothing())
        .execute();
    }
    const codes = new Set<string>();
    const pairs = new Set<string>();
    for (const p of pending) {
      const pair = `${p.deviceId}\n${p.clientId}`;
      if (codes.has(p.code) || pairs.has(pair)) continue;
      codes.add(p.code);
      pairs.add(pair);
      await trx
        .insertInto('pending_codes')
        .values({
          code: p.code,
          device_id: p.deviceId,
          client_id: p.clientId,
          source: 'imported',
          expires_ms: p.expiresAt,
          created_ms: now,
          generation: p.generation,
        })
        .execute();
    }
  });
  const dropped = f.devices.length - bound.length + f.pending.length - pending.length;
  renameSync(file, `${file}.imported`);
  log.info(
    { file, movedTo: `${file}.imported`, bound: bound.length, pending: pending.length, dropped },
    'store: imported the old device registry file',
  );
  return true;
}
