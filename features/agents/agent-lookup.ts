/**
 * @module Where the voice pipeline learns which agent a device uses and what that agent's settings
 * are: synchronous reads (a turn start must not wait for a database) plus a change feed. The
 * store's per-process cache satisfies this interface; `configAgentLookup` serves the
 * configuration's `agents:` list from memory (no store, and the tests), and can be changed at
 * run time like the store's cache is.
 */
import type { AgentRow, StoreChange } from '../../store/types.ts';
import type { ConfigAgent } from './agent-settings.ts';

export interface AgentLookup {
  /** The agent a device uses; null: the default agent. */
  agentNameOf(deviceId: string): string | null;
  agent(name: string): AgentRow | undefined;
  agents(): AgentRow[];
  /** Calls `listener` after each change; returns the unsubscribe. */
  onChange(listener: (change: StoreChange) => void): () => void;
}

/** The store's cache (`store.cache`) and change feed (`store.onChange`) as one lookup. */
export function agentLookupOf(cache: Omit<AgentLookup, 'onChange'>, onChange: AgentLookup['onChange']): AgentLookup {
  return {
    agentNameOf: (deviceId) => cache.agentNameOf(deviceId),
    agent: (name) => cache.agent(name),
    agents: () => cache.agents(),
    onChange,
  };
}

/** A configured agent as the store's `Agents.ensure` takes it: its settings apart from its name and devices. */
export function configAgentParts(agent: ConfigAgent): {
  name: string;
  settings: Record<string, unknown>;
  devices: string[];
} {
  const { name, devices, ...settings } = agent;
  return { name, settings, devices };
}

/** An in-memory lookup whose agents and device assignments can be changed at run time. */
export interface MutableAgentLookup extends AgentLookup {
  /** Creates or replaces an agent's settings. */
  setAgent(name: string, settings: Record<string, unknown>): void;
  /** Removes an agent; its devices fall back to the default agent. */
  deleteAgent(name: string): void;
  /** Gives a device an agent (null: the default agent). */
  setDeviceAgent(deviceId: string, agent: string | null): void;
}

/** The configuration's `agents:` (with their `devices:`), in memory. */
export function configAgentLookup(config: { agents: readonly ConfigAgent[] }): MutableAgentLookup {
  const agents = new Map<string, AgentRow>();
  const devices = new Map<string, string>();
  const listeners = new Set<(change: StoreChange) => void>();
  const emit = (change: StoreChange): void => {
    for (const l of [...listeners]) l(change);
  };
  const now = (): string => new Date().toISOString();
  const put = (name: string, settings: Record<string, unknown>): void => {
    const at = now();
    agents.set(name, {
      name,
      settings: structuredClone(settings),
      createdAt: agents.get(name)?.createdAt ?? at,
      updatedAt: at,
    });
  };
  for (const a of config.agents) {
    const { name, settings, devices: ids } = configAgentParts(a);
    put(name, settings);
    // The first agent that lists a device keeps it (as the store's `ensure` does).
    for (const id of ids) if (!devices.has(id)) devices.set(id, name);
  }
  return {
    agentNameOf: (deviceId) => {
      const name = devices.get(deviceId);
      return name !== undefined && agents.has(name) ? name : null;
    },
    agent: (name) => agents.get(name),
    agents: () => [...agents.values()],
    onChange: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    setAgent: (name, settings) => {
      put(name, settings);
      emit({ kind: 'agent', name });
    },
    deleteAgent: (name) => {
      agents.delete(name);
      for (const [id, n] of devices) {
        if (n !== name) continue;
        devices.delete(id);
        emit({ kind: 'device', deviceId: id });
      }
      emit({ kind: 'agent', name });
    },
    setDeviceAgent: (deviceId, agent) => {
      if (agent === null) devices.delete(deviceId);
      else devices.set(deviceId, agent);
      emit({ kind: 'device', deviceId });
    },
  };
}
