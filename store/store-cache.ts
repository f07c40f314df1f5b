/**
 * @module The per-process copy of what the hot path reads: bindings (is this pair bound, with which
 * generation), agents, and which agent each device uses. Loaded at start; each change (written
 * here, or by another process and delivered by the change feed) re-reads only the rows it names
 * and tells the listeners what differs, so a revocation anywhere ends the session here.
 */
import type { Kysely } from 'kysely';
import type { Logger } from '../core/logger.ts';
import type { Database } from './schema.ts';
import type { AgentRow, StoreChange } from './types.ts';
import type { BoundDevice } from './identity-registry-types.ts';
import { pairKey } from './pair-key.ts';

/** Synchronous reads for the hot path. */
export interface StoreCache {
  /** null: the device uses the default agent. */
  agentNameOf(deviceId: string): string | null;
  agent(name: string): AgentRow | undefined;
  agents(): AgentRow[];
}

type Listener<T> = (value: T) => void;

export function agentFromRow(row: {
  name: string;
  settings: string;
  created_at: string;
  updated_at: string;
}): AgentRow {
  let settings: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(row.settings);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) settings = parsed as Record<string, unknown>;
  } catch {
    // A row that is not JSON reads as no settings (everything falls back to the configuration).
  }
  return { name: row.name, settings, createdAt: row.created_at, updatedAt: row.updated_at };
}

export function boundFromRow(row: {
  id: string;
  device_id: string;
  client_id: string;
  bound_at: string;
  generation: number | string;
}): BoundDevice {
  return {
    id: row.id,
    deviceId: row.device_id,
    clientId: row.client_id,
    boundAt: row.bound_at,
    generation: Number(row.generation),
  };
}

export class CacheState implements StoreCache {
  readonly #db: Kysely<Database>;
  readonly #log: Logger;
  #bindings = new Map<string, BoundDevice>();
  /** The same bindings by MAC (OTA asks for every request). */
  #byDevice = new Map<string, Map<string, BoundDevice>>();
  #agents = new Map<string, AgentRow>();
  #deviceAgents = new Map<string, string>();
  readonly #changeListeners = new Set<Listener<StoreChange>>();
  readonly #boundListeners: Array<Listener<BoundDevice[]>> = [];
  readonly #revokedListeners: Array<Listener<BoundDevice[]>> = [];

  constructor(db: Kysely<Database>, log: Logger) {
    this.#db = db;
    this.#log = log;
  }

  agentNameOf(deviceId: string): string | null {
    return this.#deviceAgents.get(deviceId.toLowerCase()) ?? null;
  }

  agent(name: string): AgentRow | undefined {
    return this.#agents.get(name);
  }

  agents(): AgentRow[] {
    return [...this.#agents.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  binding(deviceId: string, clientId: string): BoundDevice | undefined {
    return this.#bindings.get(pairKey(deviceId, clientId));
  }

  /** The bindings of one MAC (normally one). */
  bindingsOf(deviceId: string): BoundDevice[] {
    const d = deviceId.toLowerCase();
    return [...(this.#byDevice.get(d)?.values() ?? [])];
  }

  onChange(listener: Listener<StoreChange>): () => void {
    this.#changeListeners.add(listener);
    return () => this.#changeListeners.delete(listener);
  }

  onBound(listener: Listener<BoundDevice[]>): void {
    this.#boundListeners.push(listener);
  }

  onRevoked(listener: Listener<BoundDevice[]>): void {
    this.#revokedListeners.push(listener);
  }

  /** A refresh after a write failed: logged, the cache stays as it was until the next change. */
  reportStale(err: unknown): void {
    this.#log.error(
      { err: (err as Error)?.message ?? String(err) },
      'store: re-reading after a write failed; the cache may lag until the next change',
    );
  }

  /** Everything, read again; listeners hear what differs from before (nothing at the first load). */
  async reload(): Promise<void> {
    const [bindings, agents, devices] = await Promise.all([
      this.#db.selectFrom('bindings').selectAll().execute(),
      this.#db.selectFrom('agents').selectAll().execute(),
      this.#db.selectFrom('devices').select(['device_id', 'agent']).where('agent', 'is not', null).execute(),
    ]);
    const nextBindings = new Map(bindings.map((r) => [pairKey(r.device_id, r.client_id), boundFromRow(r)]));
    const nextAgents = new Map(agents.map((r) => [r.name, agentFromRow(r)]));
    const nextDevices = new Map(devices.map((r) => [r.device_id, r.agent ?? '']));
    const changes: StoreChange[] = [];
    for (const key of new Set([...this.#bindings.keys(), ...nextBindings.keys()])) {
      const a = this.#bindings.get(key);
      const b = nextBindings.get(key);
      if (a?.generation !== b?.generation) {
        const [deviceId = '', clientId = ''] = key.split('\n');
        changes.push({ kind: 'binding', deviceId, clientId });
      }
    }
    for (const name of new Set([...this.#agents.keys(), ...nextAgents.keys()])) {
      if (this.#agents.get(name)?.updatedAt !== nextAgents.get(name)?.updatedAt) changes.push({ kind: 'agent', name });
    }
    for (const id of new Set([...this.#deviceAgents.keys(), ...nextDevices.keys()])) {
      if (this.#deviceAgents.get(id) !== nextDevices.get(id)) changes.push({ kind: 'device', deviceId: id });
    }
    const before = this.#bindings;
    this.#bindings = new Map();
    this.#byDevice = new Map();
    for (const [k, b] of nextBindings) this.#setBinding(k, b);
    this.#agents = nextAgents;
    this.#deviceAgents = nextDevices;
    this.#emitBindings(before, changes);
    for (const c of changes) this.#emitChange(c);
  }

  /** Re-reads the rows these changes name, then tells the listeners. */
  async apply(changes: readonly StoreChange[]): Promise<void> {
    const before = new Map<string, BoundDevice | undefined>();
    const seen = new Set<string>();
    for (const c of changes) {
      const key = JSON.stringify(c);
      if (seen.has(key)) continue;
      seen.add(key);
      if (c.kind === 'binding') {
        const k = pairKey(c.deviceId, c.clientId);
        const row = await this.#db
          .selectFrom('bindings')
          .selectAll()
          .where('device_id', '=', c.deviceId.toLowerCase())
          .where('client_id', '=', c.clientId.toLowerCase())
          .executeTakeFirst();
        if (!before.has(k)) before.set(k, this.#bindings.get(k));
        if (row) this.#setBinding(k, boundFromRow(row));
        else this.#deleteBinding(k);
      } else if (c.kind === 'agent') {
        const row = await this.#db.selectFrom('agents').selectAll().where('name', '=', c.name).executeTakeFirst();
        if (row) this.#agents.set(c.name, agentFromRow(row));
        else this.#agents.delete(c.name);
      } else if (c.kind === 'device') {
        const id = c.deviceId.toLowerCase();
        const row = await this.#db.selectFrom('devices').select('agent').where('device_id', '=', id).executeTakeFirst();
        if (row?.agent) this.#deviceAgents.set(id, row.agent);
        else this.#deviceAgents.delete(id);
      }
    }
    const bound: BoundDevice[] = [];
    const revoked: BoundDevice[] = [];
    for (const [k, old] of before) {
      const now = this.#bindings.get(k);
      if (old?.generation === now?.generation) continue;
      if (old) revoked.push(old);
      if (now) bound.push(now);
    }
    this.#emit(this.#revokedListeners, revoked);
    this.#emit(this.#boundListeners, bound);
    for (const c of changes) this.#emitChange(c);
  }

  #setBinding(key: string, b: BoundDevice): void {
    this.#deleteBinding(key);
    this.#bindings.set(key, b);
    let ofDevice = this.#byDevice.get(b.deviceId);
    if (!ofDevice) this.#byDevice.set(b.deviceId, (ofDevice = new Map()));
    ofDevice.set(key, b);
  }

  #deleteBinding(key: string): void {
    const old = this.#bindings.get(key);
    if (!old) return;
    this.#bindings.delete(key);
    const ofDevice = this.#byDevice.get(old.deviceId);
    ofDevice?.delete(key);
    if (ofDevice?.size === 0) this.#byDevice.delete(old.deviceId);
  }

  #emitBindings(before: Map<string, BoundDevice>, changes: StoreChange[]): void {
    const revoked: BoundDevice[] = [];
    const bound: BoundDevice[] = [];
    for (const c of changes) {
      if (c.kind !== 'binding') continue;
      const k = pairKey(c.deviceId, c.clientId);
      const old = before.get(k);
      const now = this.#bindings.get(k);
      if (old) revoked.push(old);
      if (now) bound.push(now);
    }
    this.#emit(this.#revokedListeners, revoked);
    this.#emit(this.#boundListeners, bound);
  }

  #emit(listeners: Array<Listener<BoundDevice[]>>, devices: BoundDevice[]): void {
    if (devices.length === 0) return;
    for (const l of listeners) {
      try {
        l(devices);
      } catch (err) {
        this.#log.error({ err }, 'store: a binding listener failed');
      }
    }
  }

  #emitChange(change: StoreChange): void {
    for (const l of this.#changeListeners) {
      try {
        l(change);
      } catch (err) {
        this.#log.error({ err }, 'store: a change listener failed');
      }
    }
  }
}
