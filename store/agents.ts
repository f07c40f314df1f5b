/**
 * @module The agents table: a name and its settings (JSON, validated by the caller with
 * features/agents/agent-settings.ts). Every change is announced (the cache of each replica follows).
 * Deleting an agent moves its devices back to the default agent.
 */
import { DeviceIdSchema } from '../protocol/ota.ts';
import type { AgentRow } from './types.ts';
import { agentFromRow } from './store-cache.ts';
import type { Writer } from './writer.ts';

export interface Agents {
  list(): Promise<AgentRow[]>;
  get(name: string): Promise<AgentRow | undefined>;
  /** undefined when the name exists already. */
  create(name: string, settings: Record<string, unknown>): Promise<AgentRow | undefined>;
  /** Replaces the settings; undefined when there is no such agent. */
  update(name: string, settings: Record<string, unknown>): Promise<AgentRow | undefined>;
  /** Devices that used it fall back to the default agent (their agent becomes null). */
  delete(name: string): Promise<boolean>;
  /** Config-declared agents: created when missing, left alone when present. Devices listed get this agent when they have none. */
  ensure(name: string, settings: Record<string, unknown>, devices: string[]): Promise<void>;
}

export class StoreAgents implements Agents {
  readonly #w: Writer;
  readonly #now: () => number;

  constructor(writer: Writer, now: () => number = Date.now) {
    this.#w = writer;
    this.#now = now;
  }

  async list(): Promise<AgentRow[]> {
    return (await this.#w.db.selectFrom('agents').selectAll().orderBy('name').execute()).map(agentFromRow);
  }

  async get(name: string): Promise<AgentRow | undefined> {
    const row = await this.#w.db.selectFrom('agents').selectAll().where('name', '=', name).executeTakeFirst();
    return row ? agentFromRow(row) : undefined;
  }

  async create(name: string, settings: Record<string, unknown>): Promise<AgentRow | undefined> {
    const at = this.#stamp();
    const made = await this.#w.write(async (trx, changed) => {
      const r = await trx
        .insertInto('agents')
        .values({ name, settings: JSON.stringify(settings), created_at: at, updated_at: at })
        .onConflict((oc) => oc.column('name').doNothing())
        .executeTakeFirst();
      const inserted = Number(r.numInsertedOrUpdatedRows ?? 0) > 0;
      if (inserted) changed({ kind: 'agent', name });
      return inserted;
    });
    return made ? { name, settings, createdAt: at, updatedAt: at } : undefined;
  }

  async update(name: string, settings: Record<string, unknown>): Promise<AgentRow | undefined> {
    const found = await this.#w.write(async (trx, changed) => {
      const r = await trx
        .updateTable('agents')
        .set({ settings: JSON.stringify(settings), updated_at: this.#stamp() })
        .where('name', '=', name)
        .executeTakeFirst();
      const hit = Number(r.numUpdatedRows) > 0;
      if (hit) changed({ kind: 'agent', name });
      return hit;
    });
    return found ? this.get(name) : undefined;
  }

  async delete(name: string): Promise<boolean> {
    return this.#w.write(async (trx, changed) => {
      const users = await trx.selectFrom('devices').select('device_id').where('agent', '=', name).execute();
      await trx.updateTable('devices').set({ agent: null }).where('agent', '=', name).execute();
      const r = await trx.deleteFrom('agents').where('name', '=', name).executeTakeFirst();
      for (const u of users) changed({ kind: 'device', deviceId: u.device_id });
      const hit = Number(r.numDeletedRows) > 0;
      if (hit) changed({ kind: 'agent', name });
      return hit;
    });
  }

  async ensure(name: string, settings: Record<string, unknown>, devices: string[]): Promise<void> {
    const at = this.#stamp();
    await this.#w.write(async (trx, changed) => {
      const r = await trx
        .insertInto('agents')
        .values({ name, settings: JSON.stringify(settings), created_at: at, updated_at: at })
        .onConflict((oc) => oc.column('name').doNothing())
        .executeTakeFirst();
      if (Number(r.numInsertedOrUpdatedRows ?? 0) > 0) changed({ kind: 'agent', name });
      for (const raw of devices) {
        const id = DeviceIdSchema.safeParse(raw);
        if (!id.success) continue;
        const row = await trx
          .selectFrom('devices')
          .select(['agent'])
          .where('device_id', '=', id.data)
          .executeTakeFirst();
        if (row && row.agent !== null) continue;
        // A device named before it was ever seen gets a record now (its Client-Id comes when it is seen).
        if (row) await trx.updateTable('devices').set({ agent: name }).where('device_id', '=', id.data).execute();
        else
          await trx
            .insertInto('devices')
            .values({
              device_id: id.data,
              client_id: '',
              alias: null,
              agent: name,
              board: null,
              firmware: null,
              first_seen: at,
              last_seen: at,
            })
            .execute();
        changed({ kind: 'device', deviceId: id.data });
      }
    });
  }

  #stamp(): string {
    return new Date(this.#now()).toISOString();
  }
}
