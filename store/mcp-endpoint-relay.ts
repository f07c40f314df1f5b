/**
 * @module What the replicas share of the MCP endpoint: each process publishes the bridges
 * connected to it (their agent, name and tools) when they change, and keeps them fresh with a
 * heartbeat that rewrites no tool list; a process whose
 * device wants a bridge connected elsewhere queues the call here for the bridge's process to run
 * and answer. Rows of a process silent for BRIDGE_STALE_MS are ignored and then deleted.
 */
import type { Kysely } from 'kysely';
import type { Database } from './schema.ts';

export const BRIDGE_STALE_MS = 30_000;

/**
 * Longest serialized arguments or result one forwarded call puts into the database, bytes. A
 * larger result is replaced by an error result saying so; larger arguments are refused.
 */
export const MAX_RELAYED_BYTES = 256 * 1024;

export interface PublishedBridge {
  id: string;
  owner: string;
  agent: string;
  name: string;
  /** Its source address (as the per-address limits count it). */
  address: string;
  connectedAt: string;
  /** JSON-able tool specs. */
  tools: unknown[];
}

export interface QueuedCall {
  id: string;
  bridgeId: string;
  tool: string;
  args: Record<string, unknown>;
}

export interface McpRelay {
  /** Replaces what `owner` has published with `bridges` (counts as a heartbeat too). */
  publish(owner: string, bridges: Omit<PublishedBridge, 'owner'>[]): Promise<void>;
  /** Marks what `owner` published as still live, without writing it again. */
  heartbeat(owner: string): Promise<void>;
  /** Bridges of `agent` published by live processes other than `owner`. */
  remote(agent: string, owner: string): Promise<PublishedBridge[]>;
  /** Queues a call for the bridge's process. */
  enqueue(owner: string, call: QueuedCall): Promise<void>;
  /** Claims the calls queued for `owner` (each claimed once). */
  claim(owner: string): Promise<QueuedCall[]>;
  finish(id: string, result: unknown): Promise<void>;
  /** The result once done (the row is removed then); undefined while not done. */
  take(id: string): Promise<unknown>;
  /** Drops a call (given up on). */
  drop(id: string): Promise<void>;
  /** Removes everything `owner` published (it stops). */
  clear(owner: string): Promise<void>;
}

export class StoreMcpRelay implements McpRelay {
  readonly #db: Kysely<Database>;
  readonly #now: () => number;

  constructor(db: Kysely<Database>, now: () => number = Date.now) {
    this.#db = db;
    this.#now = now;
  }

  async publish(owner: string, bridges: Omit<PublishedBridge, 'owner'>[]): Promise<void> {
    const now = this.#now();
    await this.#db.transaction().execute(async (trx) => {
      await trx.deleteFrom('mcp_bridges').where('owner', '=', owner).execute();
      for (const b of bridges)
        await trx
          .insertInto('mcp_bridges')
          .values({
            id: b.id,
            owner,
            agent: b.agent,
            name: b.name,
            address: b.address,
            connected_at: b.connectedAt,
            tools: JSON.stringify(b.tools),
            seen_ms: now,
          })
          .execute();
      await this.#sweep(trx, now);
    });
  }

  async heartbeat(owner: string): Promise<void> {
    const now = this.#now();
    await this.#db.transaction().execute(async (trx) => {
      await trx.updateTable('mcp_bridges').set({ seen_ms: now }).where('owner', '=', owner).execute();
      await this.#sweep(trx, now);
    });
  }

  /** Rows of processes that stopped without clearing (a crash) go after a while. */
  async #sweep(trx: Kysely<Database>, now: number): Promise<void> {
    await trx
      .deleteFrom('mcp_bridges')
      .where('seen_ms', '<', now - 4 * BRIDGE_STALE_MS)
      .execute();
    await trx
      .deleteFrom('mcp_calls')
      .where('created_ms', '<', now - 4 * BRIDGE_STALE_MS)
      .execute();
  }

  async remote(agent: string, owner: string): Promise<PublishedBridge[]> {
    const rows = await this.#db
      .selectFrom('mcp_bridges')
      .selectAll()
      .where('agent', '=', agent)
      .where('owner', '<>', owner)
      .where('seen_ms', '>=', this.#now() - BRIDGE_STALE_MS)
      .orderBy('id')
      .execute();
    return rows.map((r) => ({
      id: r.id,
      owner: r.owner,
      agent: r.agent,
      name: r.name,
      address: r.address,
      connectedAt: r.connected_at,
      tools: parseArray(r.tools),
    }));
  }

  async enqueue(owner: string, call: QueuedCall): Promise<void> {
    const args = JSON.stringify(call.args);
    const bytes = Buffer.byteLength(args);
    if (bytes > MAX_RELAYED_BYTES)
      throw new Error(`arguments of ${bytes} bytes are over the limit of ${MAX_RELAYED_BYTES} bytes`);
    await this.#db
      .insertInto('mcp_calls')
      .values({
        id: call.id,
        owner,
        bridge_id: call.bridgeId,
        tool: call.tool,
        args,
        state: 'queued',
        result: null,
        created_ms: this.#now(),
      })
      .execute();
  }

  async claim(owner: string): Promise<QueuedCall[]> {
    const rows = await this.#db
      .selectFrom('mcp_calls')
      .select(['id', 'bridge_id', 'tool', 'args'])
      .where('owner', '=', owner)
      .where('state', '=', 'queued')
      .limit(64)
      .execute();
    const out: QueuedCall[] = [];
    for (const r of rows) {
      // Claimed by whoever flips its state first.
      const u = await this.#db
        .updateTable('mcp_calls')
        .set({ state: 'running' })
        .where('id', '=', r.id)
        .where('state', '=', 'queued')
        .executeTakeFirst();
      if (Number(u.numUpdatedRows) === 0) continue;
      const args = parseObject(r.args);
      out.push({ id: r.id, bridgeId: r.bridge_id, tool: r.tool, args });
    }
    return out;
  }

  async finish(id: string, result: unknown): Promise<void> {
    let text = JSON.stringify(result);
    const bytes = Buffer.byteLength(text);
    if (bytes > MAX_RELAYED_BYTES) {
      text = JSON.stringify({
        content: [
          {
            type: 'text',
            text: `The tool's result of ${bytes} bytes is over the limit of ${MAX_RELAYED_BYTES} bytes a call forwarded between replicas may return.`,
          },
        ],
        isError: true,
      });
    }
    await this.#db.updateTable('mcp_calls').set({ state: 'done', result: text }).where('id', '=', id).execute();
  }

  async take(id: string): Promise<unknown> {
    const row = await this.#db
      .selectFrom('mcp_calls')
      .select(['state', 'result'])
      .where('id', '=', id)
      .executeTakeFirst();
    if (row?.state !== 'done' || row.result === null) return undefined;
    await this.drop(id);
    return JSON.parse(row.result) as unknown;
  }

  async drop(id: string): Promise<void> {
    await this.#db.deleteFrom('mcp_calls').where('id', '=', id).execute();
  }

  async clear(owner: string): Promise<void> {
    await this.#db.deleteFrom('mcp_bridges').where('owner', '=', owner).execute();
    await this.#db.deleteFrom('mcp_calls').where('owner', '=', owner).execute();
  }
}

function parseArray(text: string): unknown[] {
  try {
    const v: unknown = JSON.parse(text);
    return Array.isArray(v) ? v : [];
  } catch {
    return [];
  }
}

function parseObject(text: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
