/**
 * @module Each device's memory: its conversation turns, the facts its user asked it to remember,
 * and a running summary, each kept per device AND agent (a device moved to another agent starts
 * that agent's memory clean; its old one stays). Every text is cut to a bound before it is stored,
 * the facts of one device and agent are capped, and `prune` removes turns past the retention
 * period and past the per-device maximum. Writes go through the store's one write path; nothing
 * here touches the cache (memory is read when a session needs it, not on the hot path).
 */
import type { Kysely } from 'kysely';
import type { Database } from './schema.ts';
import type { Writer } from './writer.ts';

/** Characters kept of one stored turn message (user, assistant, or a tool call in short form). */
export const MAX_TURN_CHARS = 2000;
/** Characters kept of one remembered fact. */
export const MAX_FACT_CHARS = 500;
/** Characters kept of a running summary. */
export const MAX_SUMMARY_CHARS = 2000;
/** Facts one device keeps with one agent; remembering past it replaces the oldest. */
export const MAX_FACTS = 50;

export type TurnRole = 'user' | 'assistant' | 'tool';

export interface NewTurn {
  deviceId: string;
  agent: string;
  role: TurnRole;
  text: string;
}

export interface StoredTurn {
  id: number;
  agent: string;
  role: TurnRole;
  text: string;
  createdAt: string;
}

export interface Fact {
  id: number;
  text: string;
  createdAt: string;
}

export interface Summary {
  text: string;
  /** The newest turn id folded into it. */
  uptoId: number;
}

export interface PruneLimits {
  retentionDays: number;
  maxTurnsPerDevice: number;
}

export interface DeviceMemoryStore {
  /** Stores turn messages (one transaction for the batch). */
  addTurns(turns: readonly NewTurn[]): Promise<void>;
  /** The newest `limit` messages of the device with the agent, oldest first. */
  recentTurns(deviceId: string, agent: string, limit: number): Promise<StoredTurn[]>;
  /** The device's newest `limit` messages with any agent, oldest first (the admin's view). */
  history(deviceId: string, limit: number): Promise<StoredTurn[]>;
  /** Messages newer than the summary, except the newest `keepRecent` (those are given back as they are). */
  unsummarised(deviceId: string, agent: string, keepRecent: number): Promise<StoredTurn[]>;
  facts(deviceId: string, agent: string): Promise<Fact[]>;
  /** Every fact the device holds with any agent (the admin's view). */
  allFacts(deviceId: string): Promise<Array<Fact & { agent: string }>>;
  remember(deviceId: string, agent: string, text: string): Promise<Fact | undefined>;
  /** Removes the facts containing `words` (case-insensitive); returns how many. */
  forget(deviceId: string, agent: string, words: string): Promise<number>;
  /** Removes the device's turns, facts and summary with the agent. */
  forgetAll(deviceId: string, agent: string): Promise<void>;
  summary(deviceId: string, agent: string): Promise<Summary | undefined>;
  summaries(deviceId: string): Promise<Array<Summary & { agent: string; updatedAt: string }>>;
  setSummary(deviceId: string, agent: string, text: string, uptoId: number): Promise<void>;
  /** Removes everything the device has with every agent. */
  deleteDevice(deviceId: string): Promise<void>;
  /** Removes turns older than the retention period and past the per-device maximum; returns how many. */
  prune(limits: PruneLimits): Promise<number>;
}

/** The pairs a device's memory rows live under, as the store keeps device ids (lower case MACs). */
function key(deviceId: string): string {
  return deviceId.toLowerCase();
}

/** At most `max` UTF-16 units, cut before a character rather than inside one (a lone surrogate). */
export function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const high = text.charCodeAt(max - 1);
  return text.slice(0, high >= 0xd800 && high <= 0xdbff ? max - 1 : max);
}

function turnOf(r: { id: number | string; agent: string | null; role: string; text: string; created_at: string }): StoredTurn {
  return { id: Number(r.id), agent: r.agent ?? '', role: r.role as TurnRole, text: r.text, createdAt: r.created_at };
}

/** Deletes everything of the device (with one agent, or all) inside a transaction. */
export async function deleteMemoryRows(trx: Kysely<Database>, deviceIds: readonly string[], agent?: string): Promise<void> {
  if (deviceIds.length === 0) return;
  const ids = deviceIds.map(key);
  for (const table of ['conversation_turns', 'memory_facts', 'memory_summaries'] as const) {
    let q = trx.deleteFrom(table).where('device_id', 'in', ids);
    if (agent !== undefined) q = q.where('agent', '=', agent);
    await q.execute();
  }
}

export class StoreDeviceMemory implements DeviceMemoryStore {
  readonly #w: Writer;
  readonly #db: Kysely<Database>;
  readonly #now: () => number;

  constructor(writer: Writer, now: () => number) {
    this.#w = writer;
    this.#db = writer.db;
    this.#now = now;
  }

  #at(): string {
    return new Date(this.#now()).toISOString();
  }

  async addTurns(turns: readonly NewTurn[]): Promise<void> {
    if (turns.length === 0) return;
    const at = this.#at();
    const rows = turns.map((t) => ({ device_id: key(t.deviceId), agent: t.agent, role: t.role, text: cut(t.text, MAX_TURN_CHARS), created_at: at }));
    await this.#w.write(async (trx) => {
      await trx.insertInto('conversation_turns').values(rows).execute();
    });
  }

  async recentTurns(deviceId: string, agent: string, limit: number): Promise<StoredTurn[]> {
    if (limit <= 0) return [];
    const rows = await this.#db.selectFrom('conversation_turns').selectAll().where('device_id', '=', key(deviceId)).where('agent', '=', agent).orderBy('id', 'desc').limit(limit).execute();
    return rows.reverse().map(turnOf);
  }

  async history(deviceId: string, limit: number): Promise<StoredTurn[]> {
    const rows = await this.#db.selectFrom('conversation_turns').selectAll().where('device_id', '=', key(deviceId)).orderBy('id', 'desc').limit(limit).execute();
    return rows.reverse().map(turnOf);
  }

  async unsummarised(deviceId: string, agent: string, keepRecent: number): Promise<StoredTurn[]> {
    const upto = (await this.summary(deviceId, agent))?.uptoId ?? 0;
    const rows = await this.#db
      .selectFrom('conversation_turns')
      .selectAll()
      .where('device_id', '=', key(deviceId))
      .where('agent', '=', agent)
      .where('id', '>', upto)
      .orderBy('id', 'asc')
      .execute();
    return rows.slice(0, Math.max(0, rows.length - keepRecent)).map(turnOf);
  }

  async facts(deviceId: string, agent: string): Promise<Fact[]> {
    const rows = await this.#db.selectFrom('memory_facts').selectAll().where('device_id', '=', key(deviceId)).where('agent', '=', agent).orderBy('id', 'asc').execute();
    return rows.map((r) => ({ id: Number(r.id), text: r.fact, createdAt: r.created_at }));
  }

  async allFacts(deviceId: string): Promise<Array<Fact & { agent: string }>> {
    const rows = await this.#db.selectFrom('memory_facts').selectAll().where('device_id', '=', key(deviceId)).orderBy('id', 'asc').execute();
    return rows.map((r) => ({ id: Number(r.id), agent: r.agent ?? '', text: r.fact, createdAt: r.created_at }));
  }

  async remember(deviceId: string, agent: string, text: string): Promise<Fact | undefined> {
    const fact = cut(text.trim(), MAX_FACT_CHARS);
    if (fact === '') return undefined;
    const at = this.#at();
    return this.#w.write(async (trx) => {
      const ids = await trx.selectFrom('memory_facts').select('id').where('device_id', '=', key(deviceId)).where('agent', '=', agent).orderBy('id', 'desc').execute();
      const over = ids.slice(MAX_FACTS - 1).map((r) => r.id);
      if (over.length > 0) await trx.deleteFrom('memory_facts').where('id', 'in', over).execute();
      const row = await trx
        .insertInto('memory_facts')
        .values({ device_id: key(deviceId), agent, fact, created_at: at, updated_at: at })
        .returning('id')
        .executeTakeFirstOrThrow();
      return { id: Number(row.id), text: fact, createdAt: at };
    });
  }

  async forget(deviceId: string, agent: string, words: string): Promise<number> {
    const needle = words.trim().toLowerCase();
    if (needle === '') return 0;
    return this.#w.write(async (trx) => {
      const rows = await trx.selectFrom('memory_facts').select(['id', 'fact']).where('device_id', '=', key(deviceId)).where('agent', '=', agent).execute();
      const gone = rows.filter((r) => r.fact.toLowerCase().includes(needle)).map((r) => r.id);
      if (gone.length > 0) await trx.deleteFrom('memory_facts').where('id', 'in', gone).execute();
      return gone.length;
    });
  }

  async forgetAll(deviceId: string, agent: string): Promise<void> {
    await this.#w.write((trx) => deleteMemoryRows(trx, [deviceId], agent));
  }

  async summary(deviceId: string, agent: string): Promise<Summary | undefined> {
    const r = await this.#db.selectFrom('memory_summaries').selectAll().where('device_id', '=', key(deviceId)).where('agent', '=', agent).executeTakeFirst();
    return r ? { text: r.text, uptoId: Number(r.upto_id) } : undefined;
  }

  async summaries(deviceId: string): Promise<Array<Summary & { agent: string; updatedAt: string }>> {
    const rows = await this.#db.selectFrom('memory_summaries').selectAll().where('device_id', '=', key(deviceId)).orderBy('agent').execute();
    return rows.map((r) => ({ agent: r.agent, text: r.text, uptoId: Number(r.upto_id), updatedAt: r.updated_at }));
  }

  async setSummary(deviceId: string, agent: string, text: string, uptoId: number): Promise<void> {
    const row = { device_id: key(deviceId), agent, text: cut(text.trim(), MAX_SUMMARY_CHARS), upto_id: uptoId, updated_at: this.#at() };
    await this.#w.write(async (trx) => {
      await trx
        .insertInto('memory_summaries')
        .values(row)
        .onConflict((oc) => oc.columns(['device_id', 'agent']).doUpdateSet({ text: row.text, upto_id: row.upto_id, updated_at: row.updated_at }))
        .execute();
    });
  }

  async deleteDevice(deviceId: string): Promise<void> {
    await this.#w.write(async (trx, changed) => {
      await deleteMemoryRows(trx, [deviceId]);
      changed({ kind: 'memory', deviceId: key(deviceId) });
    });
  }

  async prune(limits: PruneLimits): Promise<number> {
    const cutoff = new Date(this.#now() - limits.retentionDays * 86_400_000).toISOString();
    return this.#w.write(async (trx) => {
      const old = await trx.deleteFrom('conversation_turns').where('created_at', '<', cutoff).executeTakeFirst();
      let removed = Number(old.numDeletedRows);
      const crowded = await trx
        .selectFrom('conversation_turns')
        .select(['device_id', (eb) => eb.fn.countAll().as('n')])
        .groupBy('device_id')
        .having((eb) => eb.fn.countAll(), '>', limits.maxTurnsPerDevice)
        .execute();
      for (const c of crowded) {
        const keep = await trx
          .selectFrom('conversation_turns')
          .select('id')
          .where('device_id', '=', c.device_id)
          .orderBy('id', 'desc')
          .offset(limits.maxTurnsPerDevice - 1)
          .limit(1)
          .executeTakeFirst();
        if (!keep) continue;
        const r = await trx.deleteFrom('conversation_turns').where('device_id', '=', c.device_id).where('id', '<', keep.id).executeTakeFirst();
        removed += Number(r.numDeletedRows);
      }
      return removed;
    });
  }
}
