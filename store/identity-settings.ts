/**
 * @module The store's own settings: the token secret (generated once when none is configured) and
 * the generation counter each pending code takes the next value of, so every binding ever made
 * has its own generation and a revoked token never works again.
 */
import { randomBytes } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { Database } from './schema.ts';

const SECRET = 'token_secret';
const GENERATION = 'generation';

/** The stored secret, created when missing (by whichever replica gets there first). */
export async function storedSecret(db: Kysely<Database>): Promise<string> {
  await db
    .insertInto('settings')
    .values({ key: SECRET, value: randomBytes(32).toString('base64url') })
    .onConflict((oc) => oc.column('key').doNothing())
    .execute();
  const row = await db.selectFrom('settings').select('value').where('key', '=', SECRET).executeTakeFirstOrThrow();
  return row.value;
}

/** Makes the counter at least `atLeast` (after an import or a repair). */
export async function raiseGeneration(db: Kysely<Database>, atLeast: number): Promise<void> {
  await db
    .insertInto('settings')
    .values({ key: GENERATION, value: '0' })
    .onConflict((oc) => oc.column('key').doNothing())
    .execute();
  const row = await db.selectFrom('settings').select('value').where('key', '=', GENERATION).executeTakeFirstOrThrow();
  if (Number(row.value) < atLeast)
    await db
      .updateTable('settings')
      .set({ value: String(atLeast) })
      .where('key', '=', GENERATION)
      .execute();
}

/** The next generation, atomically (inside the caller's transaction). */
export async function nextGeneration(db: Kysely<Database>): Promise<number> {
  const r = await sql<{
    value: string;
  }>`update settings set value = cast(cast(value as integer) + 1 as text) where key = ${GENERATION} returning value`.execute(
    db,
  );
  const v = r.rows[0]?.value;
  if (v === undefined) throw new Error('store: the generation counter is missing');
  return Number(v);
}

/** Whether the store has ever been used (a secret or a counter stored). */
export async function hasSettings(db: Kysely<Database>): Promise<boolean> {
  const row = await db.selectFrom('settings').select('key').where('key', 'in', [SECRET, GENERATION]).executeTakeFirst();
  return row !== undefined;
}
