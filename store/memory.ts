/**
 * @module Each device's memory: its conversation turns, the facts its user asked it to remember,
 * and a running summary, each kept per identity pair (Device-Id + Client-Id) AND agent. A pair is
 * what a device is: in open mode anyone may present a known MAC with another Client-Id, and starts
 * with nothing of that device's memory unless the operator moves it over (`move`). A device moved
 * to another agent starts that agent's memory clean; its old one stays. Rows kept from before
 * memory was per pair, of a device without a record, have `''` as their Client-Id (unassigned, shown
 * as null): no session reads them, the admin views show them and `move` gives them to a pair.
 * Every text is cut to a bound before it is stored, the facts of one pair and agent are capped, and
 * `prune` removes turns past the retention period and past the per-pair maximum. Writes go through
 * the store's one write path; nothing here touches the cache (memory is read when a session needs
 * it, not on the hot path).
 */
import type { Kysely } from 'kysely';
import type { Database } from './schema.ts';
import type { Writer } from './writer.ts';
import { storedPair, type DevicePair } from './pair-key.ts';
import { cut } from './text-cut.ts';
import { moveReminderRows } from './reminders.ts';
import { moveWaitingMessages } from './push-messages.ts';

/** Characters kept of one stored turn message (user, assistant, or a tool call in short form). */
export const MAX_TURN_CHARS = 2000;
/** Characters kept of one remembered fact. */
export const MAX_FACT_CHARS = 500;
/** Characters kept of a running summary. */
export const MAX_SUMMARY_CHARS = 2000;
/** Facts one pair keeps with one agent; remembering past it (or a move) drops the oldest. */
export const MAX_FACTS = 50;
/** The Client-Id of rows kept from before memory was per pair, of a device without a record. */
const UNASSIGNED = '';

export type TurnRole = 'user' | 'assistant' | 'tool';

export interface NewTurn extends DevicePair {
  agent: string;
  role: TurnRole;
  text: string;
}

export interface StoredTurn {
  id: number;
  /** The pair's Client-Id; null: unassigned (kept from before memory was per pair). */
  clientId: string | null;
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
  /** Turn messages kept per pair, all agents together. */
  maxTurnsPerDevice: number;
}

/** One pair of a device that holds memory (the admin's view); clientId null: unassigned. */
export interface MemoryHolder {
  clientId: string | null;
  turns: number;
  facts: number;
  summaries: number;
  /** Its newest turn, if any. */
  lastAt: string | null;
}

/** What a `move` gave the target pair. */
export interface MovedMemory {
  turns: number;
  facts: number;
  summaries: number;
  reminders: number;
  messages: number;
}

export interface DeviceMemoryStore {
  /** Stores turn messages (one transaction for the batch). */
  addTurns(turns: readonly NewTurn[]): Promise<void>;
  /** The newest `limit` messages of the pair with the agent, oldest first. */
  recentTurns(pair: DevicePair, agent: string, limit: number): Promise<StoredTurn[]>;
  /**
   * The device's newest `limit` messages with any agent, oldest first (the admin's view): of every
   * pair, or of one (`clientId`; null: the unassigned ones).
   */
  history(deviceId: string, limit: number, clientId?: string | null): Promise<StoredTurn[]>;
  /** Messages newer than the summary, except the newest `keepRecent` (those are given back as they are). */
  unsummarised(pair: DevicePair, agent: string, keepRecent: number): Promise<StoredTurn[]>;
  facts(pair: DevicePair, agent: string): Promise<Fact[]>;
  /** The newest `limit` facts of every pair of the device with any agent, oldest first (the admin's view). */
  allFacts(deviceId: string, limit: number): Promise<Array<Fact & { agent: string; clientId: string | null }>>;
  remember(pair: DevicePair, agent: string, text: string): Promise<Fact | undefined>;
  /** Removes the facts containing `words` (case-insensitive); returns how many. */
  forget(pair: DevicePair, agent: string, words: string): Promise<number>;
  /** Removes the pair's turns, facts and summary with the agent. */
  forgetAll(pair: DevicePair, agent: string): Promise<void>;
  summary(pair: DevicePair, agent: string): Promise<Summary | undefined>;
  /** The most recently written `limit` summaries of every pair of the device (the admin's view). */
  summaries(
    deviceId: string,
    limit: number,
  ): Promise<Array<Summary & { agent: string; clientId: string | null; updatedAt: string }>>;
  setSummary(pair: DevicePair, agent: string, text: string, uptoId: number): Promise<void>;
  /**
   * The pairs of the device that hold memory, the most recently talking first (unassigned last),
   * at most `limit` (in open mode anyone may invent Client-Ids for a MAC).
   */
  holders(deviceId: string, limit: number): Promise<MemoryHolder[]>;
  /**
   * Gives everything pair `from` holds (null: the unassigned rows) to pair `to`, in one
   * transaction: turns, facts (past MAX_FACTS per agent the oldest go), summaries (where both hold
   * one for an agent, the one covering newer turns stays), reminders and waiting messages.
   */
  move(deviceId: string, from: string | null, to: string): Promise<MovedMemory>;
  /** Removes everything of one pair (`clientId`; null: the unassigned rows) or, without it, of every pair of the device. */
  deleteDevice(deviceId: string, clientId?: string | null): Promise<void>;
  /** Removes turns older than the retention period and past the per-pair maximum; returns how many. */
  prune(limits: PruneLimits): Promise<number>;
}

/** The device id as rows keep it (a lower case MAC). */
function key(deviceId: string): string {
  return deviceId.toLowerCase();
}

/** A Client-Id as rows keep it: lower case, '' for unassigned (null). */
function clientKey(clientId: string | null): string {
  return clientId === null ? UNASSIGNED : clientId.toLowerCase();
}

/** A row's Client-Id as the views show it. */
function clientOf(stored: string): string | null {
  return stored === UNASSIGNED ? null : stored;
}

function turnOf(r: {
  id: number | string;
  client_id: string;
  agent: string | null;
  role: string;
  text: string;
  created_at: string;
}): StoredTurn {
  return {
    id: Number(r.id),
    clientId: clientOf(r.client_id),
    agent: r.agent ?? '',
    role: r.role as TurnRole,
    text: r.text,
    createdAt: r.created_at,
  };
}

const MEMORY_TABLES = ['conversation_turns', 'memory_facts', 'memory_summaries'] as const;

/**
 * Deletes the memory of the devices inside a transaction: of every pair (a revoke: the device is
 * no longer its owner's) or of one (`clientId`, null: the unassigned rows), with one agent or all.
 */
export async function deleteMemoryRows(
  trx: Kysely<Database>,
  deviceIds: readonly string[],
  opts: { agent?: string; clientId?: string | null } = {},
): Promise<void> {
  if (deviceIds.length === 0) return;
  const ids = deviceIds.map(key);
  for (const table of MEMORY_TABLES) {
    let q = trx.deleteFrom(table).where('device_id', 'in', ids);
    if (opts.clientId !== undefined) q = q.where('client_id', '=', clientKey(opts.clientId));
    if (opts.agent !== undefined) q = q.where('agent', '=', opts.agent);
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
    const rows = turns.map((t) => ({
      ...pairColumns(t),
      agent: t.agent,
      role: t.role,
      text: cut(t.text, MAX_TURN_CHARS),
      created_at: at,
    }));
    await this.#w.write(async (trx) => {
      await trx.insertInto('conversation_turns').values(rows).execute();
    });
  }

  async recentTurns(pair: DevicePair, agent: string, limit: number): Promise<StoredTurn[]> {
    if (limit <= 0) return [];
    const rows = await this.#turnsOf(pair, agent).orderBy('id', 'desc').limit(limit).execute();
    return rows.reverse().map(turnOf);
  }

  /** One pair's turns with one agent: the query `recentTurns` and `unsummarised` narrow. */
  #turnsOf(pair: DevicePair, agent: string) {
    const p = storedPair(pair);
    return this.#db
      .selectFrom('conversation_turns')
      .selectAll()
      .where('device_id', '=', p.deviceId)
      .where('client_id', '=', p.clientId)
      .where('agent', '=', agent);
  }

  async history(deviceId: string, limit: number, clientId?: string | null): Promise<StoredTurn[]> {
    let q = this.#db.selectFrom('conversation_turns').selectAll().where('device_id', '=', key(deviceId));
    if (clientId !== undefined) q = q.where('client_id', '=', clientKey(clientId));
    const rows = await q.orderBy('id', 'desc').limit(limit).execute();
    return rows.reverse().map(turnOf);
  }

  async unsummarised(pair: DevicePair, agent: string, keepRecent: number): Promise<StoredTurn[]> {
    const upto = (await this.summary(pair, agent))?.uptoId ?? 0;
    const rows = await this.#turnsOf(pair, agent).where('id', '>', upto).orderBy('id', 'asc').execute();
    return rows.slice(0, Math.max(0, rows.length - keepRecent)).map(turnOf);
  }

  async facts(pair: DevicePair, agent: string): Promise<Fact[]> {
    const p = storedPair(pair);
    const rows = await this.#db
      .selectFrom('memory_facts')
      .selectAll()
      .where('device_id', '=', p.deviceId)
      .where('client_id', '=', p.clientId)
      .where('agent', '=', agent)
      .orderBy('id', 'asc')
      .execute();
    return rows.map((r) => ({ id: Number(r.id), text: r.fact, createdAt: r.created_at }));
  }

  async allFacts(deviceId: string, limit: number): Promise<Array<Fact & { agent: string; clientId: string | null }>> {
    const rows = await this.#db
      .selectFrom('memory_facts')
      .selectAll()
      .where('device_id', '=', key(deviceId))
      .orderBy('id', 'desc')
      .limit(limit)
      .execute();
    return rows.reverse().map((r) => ({
      id: Number(r.id),
      clientId: clientOf(r.client_id),
      agent: r.agent ?? '',
      text: r.fact,
      createdAt: r.created_at,
    }));
  }

  async remember(pair: DevicePair, agent: string, text: string): Promise<Fact | undefined> {
    const fact = cut(text.trim(), MAX_FACT_CHARS);
    if (fact === '') return undefined;
    const at = this.#at();
    const p = storedPair(pair);
    return this.#w.write(async (trx) => {
      await capFacts(trx, p, agent, MAX_FACTS - 1);
      const row = await trx
        .insertInto('memory_facts')
        .values({ ...pairColumns(p), agent, fact, created_at: at, updated_at: at })
        .returning('id')
        .executeTakeFirstOrThrow();
      return { id: Number(row.id), text: fact, createdAt: at };
    });
  }

  async forget(pair: DevicePair, agent: string, words: string): Promise<number> {
    const needle = words.trim().toLowerCase();
    if (needle === '') return 0;
    const p = storedPair(pair);
    return this.#w.write(async (trx) => {
      const rows = await trx
        .selectFrom('memory_facts')
        .select(['id', 'fact'])
        .where('device_id', '=', p.deviceId)
        .where('client_id', '=', p.clientId)
        .where('agent', '=', agent)
        .execute();
      const gone = rows.filter((r) => r.fact.toLowerCase().includes(needle)).map((r) => r.id);
      if (gone.length > 0) await trx.deleteFrom('memory_facts').where('id', 'in', gone).execute();
      return gone.length;
    });
  }

  async forgetAll(pair: DevicePair, agent: string): Promise<void> {
    await this.#w.write((trx) => deleteMemoryRows(trx, [pair.deviceId], { agent, clientId: pair.clientId }));
  }

  async summary(pair: DevicePair, agent: string): Promise<Summary | undefined> {
    const p = storedPair(pair);
    const r = await this.#db
      .selectFrom('memory_summaries')
      .selectAll()
      .where('device_id', '=', p.deviceId)
      .where('client_id', '=', p.clientId)
      .where('agent', '=', agent)
      .executeTakeFirst();
    return r ? { text: r.text, uptoId: Number(r.upto_id) } : undefined;
  }

  async summaries(
    deviceId: string,
    limit: number,
  ): Promise<Array<Summary & { agent: string; clientId: string | null; updatedAt: string }>> {
    const rows = await this.#db
      .selectFrom('memory_summaries')
      .selectAll()
      .where('device_id', '=', key(deviceId))
      .orderBy('updated_at', 'desc')
      .orderBy('client_id')
      .orderBy('agent')
      .limit(limit)
      .execute();
    return rows.map((r) => ({
      clientId: clientOf(r.client_id),
      agent: r.agent,
      text: r.text,
      uptoId: Number(r.upto_id),
      updatedAt: r.updated_at,
    }));
  }

  async setSummary(pair: DevicePair, agent: string, text: string, uptoId: number): Promise<void> {
    const row = {
      ...pairColumns(pair),
      agent,
      text: cut(text.trim(), MAX_SUMMARY_CHARS),
      upto_id: uptoId,
      updated_at: this.#at(),
    };
    await this.#w.write(async (trx) => {
      await trx
        .insertInto('memory_summaries')
        .values(row)
        .onConflict((oc) =>
          oc
            .columns(['device_id', 'client_id', 'agent'])
            .doUpdateSet({ text: row.text, upto_id: row.upto_id, updated_at: row.updated_at }),
        )
        .execute();
    });
  }

  async holders(deviceId: string, limit: number): Promise<MemoryHolder[]> {
    const d = key(deviceId);
    const [turns, facts, summaries] = await Promise.all([
      this.#db
        .selectFrom('conversation_turns')
        .select(['client_id', (eb) => eb.fn.countAll().as('n'), (eb) => eb.fn.max('created_at').as('last')])
        .where('device_id', '=', d)
        .groupBy('client_id')
        .orderBy('last', 'desc')
        .limit(limit)
        .execute(),
      this.#db
        .selectFrom('memory_facts')
        .select(['client_id', (eb) => eb.fn.countAll().as('n')])
        .where('device_id', '=', d)
        .groupBy('client_id')
        .limit(limit)
        .execute(),
      this.#db
        .selectFrom('memory_summaries')
        .select(['client_id', (eb) => eb.fn.countAll().as('n')])
        .where('device_id', '=', d)
        .groupBy('client_id')
        .limit(limit)
        .execute(),
    ]);
    const by = new Map<string, MemoryHolder>();
    const holder = (c: string): MemoryHolder => {
      let h = by.get(c);
      if (!h) by.set(c, (h = { clientId: clientOf(c), turns: 0, facts: 0, summaries: 0, lastAt: null }));
      return h;
    };
    for (const r of turns) Object.assign(holder(r.client_id), { turns: Number(r.n), lastAt: r.last ?? null });
    for (const r of facts) holder(r.client_id).facts = Number(r.n);
    for (const r of summaries) holder(r.client_id).summaries = Number(r.n);
    // The most recently talking first; unassigned rows last.
    return [...by.values()]
      .sort(
        (a, b) =>
          Number(a.clientId === null) - Number(b.clientId === null) || (b.lastAt ?? '').localeCompare(a.lastAt ?? ''),
      )
      .slice(0, limit);
  }

  async move(deviceId: string, from: string | null, to: string): Promise<MovedMemory> {
    const d = key(deviceId);
    const source = clientKey(from);
    const target = clientKey(to);
    if (source === target) return { turns: 0, facts: 0, summaries: 0, reminders: 0, messages: 0 };
    return this.#w.write(async (trx, changed) => {
      const turns = await trx
        .updateTable('conversation_turns')
        .set({ client_id: target })
        .where('device_id', '=', d)
        .where('client_id', '=', source)
        .executeTakeFirst();
      const facts = await trx
        .updateTable('memory_facts')
        .set({ client_id: target })
        .where('device_id', '=', d)
        .where('client_id', '=', source)
        .executeTakeFirst();
      // Past the bound per agent, the oldest facts go (as when remembering).
      const agents = await trx
        .selectFrom('memory_facts')
        .select('agent')
        .distinct()
        .where('device_id', '=', d)
        .where('client_id', '=', target)
        .execute();
      for (const a of agents)
        if (a.agent !== null) await capFacts(trx, { deviceId: d, clientId: target }, a.agent, MAX_FACTS);
      let summaries = 0;
      const moving = await trx
        .selectFrom('memory_summaries')
        .selectAll()
        .where('device_id', '=', d)
        .where('client_id', '=', source)
        .execute();
      for (const s of moving) {
        const summaryOf = (c: string) =>
          trx
            .deleteFrom('memory_summaries')
            .where('device_id', '=', d)
            .where('client_id', '=', c)
            .where('agent', '=', s.agent);
        const held = await trx
          .selectFrom('memory_summaries')
          .select('upto_id')
          .where('device_id', '=', d)
          .where('client_id', '=', target)
          .where('agent', '=', s.agent)
          .executeTakeFirst();
        // Both hold one with this agent: the one that covers the newer turns stays.
        if (held && Number(held.upto_id) >= Number(s.upto_id)) {
          await summaryOf(source).execute();
          continue;
        }
        if (held) await summaryOf(target).execute();
        await trx
          .updateTable('memory_summaries')
          .set({ client_id: target })
          .where('device_id', '=', d)
          .where('client_id', '=', source)
          .where('agent', '=', s.agent)
          .execute();
        summaries++;
      }
      // Reminders and waiting messages: unassigned rows have none (they always had their pair).
      const reminders = from === null ? 0 : await moveReminderRows(trx, d, source, target);
      const messages = from === null ? [] : await moveWaitingMessages(trx, d, source, target);
      changed({ kind: 'memory', deviceId: d, clientId: source });
      changed({ kind: 'memory', deviceId: d, clientId: target });
      for (const id of messages) changed({ kind: 'push', id, deviceId: d });
      return {
        turns: Number(turns.numUpdatedRows),
        facts: Number(facts.numUpdatedRows),
        summaries,
        reminders,
        messages: messages.length,
      };
    });
  }

  async deleteDevice(deviceId: string, clientId?: string | null): Promise<void> {
    await this.#w.write(async (trx, changed) => {
      await deleteMemoryRows(trx, [deviceId], clientId === undefined ? {} : { clientId });
      changed({
        kind: 'memory',
        deviceId: key(deviceId),
        ...(clientId === undefined ? {} : { clientId: clientKey(clientId) }),
      });
    });
  }

  async prune(limits: PruneLimits): Promise<number> {
    const cutoff = new Date(this.#now() - limits.retentionDays * 86_400_000).toISOString();
    return this.#w.write(async (trx) => {
      const old = await trx.deleteFrom('conversation_turns').where('created_at', '<', cutoff).executeTakeFirst();
      let removed = Number(old.numDeletedRows);
      const crowded = await trx
        .selectFrom('conversation_turns')
        .select(['device_id', 'client_id', (eb) => eb.fn.countAll().as('n')])
        .groupBy(['device_id', 'client_id'])
        .having((eb) => eb.fn.countAll(), '>', limits.maxTurnsPerDevice)
        .execute();
      for (const c of crowded) {
        const keep = await trx
          .selectFrom('conversation_turns')
          .select('id')
          .where('device_id', '=', c.device_id)
          .where('client_id', '=', c.client_id)
          .orderBy('id', 'desc')
          .offset(limits.maxTurnsPerDevice - 1)
          .limit(1)
          .executeTakeFirst();
        if (!keep) continue;
        const r = await trx
          .deleteFrom('conversation_turns')
          .where('device_id', '=', c.device_id)
          .where('client_id', '=', c.client_id)
          .where('id', '<', keep.id)
          .executeTakeFirst();
        removed += Number(r.numDeletedRows);
      }
      return removed;
    });
  }
}

/** The pair's columns of a row. */
function pairColumns(pair: DevicePair): { device_id: string; client_id: string } {
  const p = storedPair(pair);
  return { device_id: p.deviceId, client_id: p.clientId };
}

/** Keeps the pair's newest `keep` facts with the agent (the pair as stored). */
async function capFacts(trx: Kysely<Database>, p: DevicePair, agent: string, keep: number): Promise<void> {
  const ids = await trx
    .selectFrom('memory_facts')
    .select('id')
    .where('device_id', '=', p.deviceId)
    .where('client_id', '=', p.clientId)
    .where('agent', '=', agent)
    .orderBy('id', 'desc')
    .execute();
  const over = ids.slice(keep).map((r) => r.id);
  if (over.length > 0) await trx.deleteFrom('memory_facts').where('id', 'in', over).execute();
}
