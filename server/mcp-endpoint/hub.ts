/**
 * @module The bridges connected to this process, by agent. A bridge joins once it has initialized
 * and listed its tools; the tools of an agent's bridges are merged into one ToolSource (a name
 * offered by two bridges is exposed as `<bridge>__<tool>` for the later one). A bridge is the same
 * bridge again when it has the same agent, the same name (its `?bridge=` parameter, else the server
 * name its initialize answered) and the same source address: its new connection replaces the old
 * one, and no other bridge of the agent is touched.
 */
import type { Logger } from '../../core/logger.ts';
import { errorResult, type ToolResult, type ToolSource, type ToolSpec } from '../../mcp/tool-source.ts';
import { CloseCodes } from '../../mcp/websocket-peer-transport.ts';
import type { Bridge } from './bridge.ts';
import type { McpEndpointLimits } from './limits.ts';

/** What the admin API shows of one bridge. */
export interface BridgeStatus {
  id: string;
  name: string;
  server: { name: string; version: string } | null;
  protocolVersion: string | null;
  address: string;
  connectedAt: string;
  tools: string[];
}

const MAX_NAME = 64;

function safe(s: string): string {
  return s.replace(/[^a-zA-Z0-9_-]/g, '_');
}

export class BridgeHub {
  readonly limits: McpEndpointLimits;
  readonly #log: Logger;
  readonly #byAgent = new Map<string, Bridge[]>();
  readonly #perAddress = new Map<string, number>();
  readonly #listeners = new Set<(agent: string) => void>();

  constructor(limits: McpEndpointLimits, log: Logger) {
    this.limits = limits;
    this.#log = log;
  }

  /** Whether one more connection from `address` fits; counts it when it does (release with `released`). */
  admit(address: string): boolean {
    const n = this.#perAddress.get(address) ?? 0;
    if (n >= this.limits.maxConnectionsPerAddress) return false;
    this.#perAddress.set(address, n + 1);
    return true;
  }

  released(address: string): void {
    const n = (this.#perAddress.get(address) ?? 1) - 1;
    if (n <= 0) this.#perAddress.delete(address);
    else this.#perAddress.set(address, n);
  }

  /** Adds a bridge that has initialized and listed its tools; closes the connection it replaces. */
  join(bridge: Bridge): void {
    const list = this.#byAgent.get(bridge.agent) ?? [];
    const same = (b: Bridge): boolean => b.name === bridge.name && b.address === bridge.address;
    const replaced = list.filter(same);
    const kept = list.filter((b) => !same(b));
    if (kept.length >= this.limits.maxBridgesPerAgent) {
      bridge.close(CloseCodes.Policy, `agent already has ${kept.length} bridges connected (the limit)`);
      return;
    }
    this.#byAgent.set(bridge.agent, [...kept, bridge]);
    for (const old of replaced) old.close(CloseCodes.Normal, 'replaced by a new connection of the same bridge');
    bridge.onClosed(() => this.#leave(bridge));
    this.#changed(bridge.agent);
  }

  /** Closes every bridge of `agent` (its token was revoked or rotated). */
  closeAgent(agent: string, reason: string): number {
    const list = this.#byAgent.get(agent) ?? [];
    for (const b of list) b.close(CloseCodes.Policy, reason);
    return list.length;
  }

  /** Closes every bridge (the server stops). */
  closeAll(): void {
    for (const list of this.#byAgent.values()) for (const b of list) b.close(CloseCodes.GoingAway, 'server shutting down');
  }

  bridgesOf(agent: string): readonly Bridge[] {
    return this.#byAgent.get(agent) ?? [];
  }

  status(agent: string): BridgeStatus[] {
    return this.bridgesOf(agent).map((b) => ({
      id: b.id,
      name: b.name,
      server: b.serverInfo ?? null,
      protocolVersion: b.protocolVersion ?? null,
      address: b.address,
      connectedAt: b.connectedAt,
      tools: b.tools.map((t) => t.name),
    }));
  }

  /** Told the agent's name when its set of tools may have changed. Returns the unsubscribe. */
  onChange(fn: (agent: string) => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  /** Tell listeners that `agent`'s tools changed (a bridge listed them again). */
  toolsChanged(agent: string): void {
    this.#changed(agent);
  }

  /**
   * The tools of the agent `agentOf()` names at each listing (a device's agent may change between
   * turns). Calls go to the bridge that offered the tool at the last listing.
   */
  toolSource(agentOf: () => string): ToolSource {
    let routes = new Map<string, { bridge: Bridge; name: string }>();
    let listedFor: string | undefined;
    const list = (): ToolSpec[] => {
      const agent = agentOf();
      const next = new Map<string, { bridge: Bridge; name: string }>();
      const out: ToolSpec[] = [];
      for (const bridge of this.bridgesOf(agent)) {
        for (const spec of bridge.tools) {
          let exposed = spec.name;
          if (next.has(exposed)) {
            exposed = `${safe(bridge.name)}__${spec.name}`.slice(0, MAX_NAME);
            if (next.has(exposed)) continue;
          }
          next.set(exposed, { bridge, name: spec.name });
          out.push(exposed === spec.name ? spec : { ...spec, name: exposed });
        }
      }
      routes = next;
      listedFor = agent;
      return out;
    };
    return {
      listTools: () => Promise.resolve(list()),
      callTool: async (name, args, opts): Promise<ToolResult> => {
        if (listedFor !== agentOf()) list();
        const route = routes.get(name);
        if (!route) return errorResult(`Unknown tool "${name}".`);
        return route.bridge.callTool(route.name, args, opts);
      },
    };
  }

  #leave(bridge: Bridge): void {
    const list = this.#byAgent.get(bridge.agent);
    if (!list?.includes(bridge)) return;
    const rest = list.filter((b) => b !== bridge);
    if (rest.length === 0) this.#byAgent.delete(bridge.agent);
    else this.#byAgent.set(bridge.agent, rest);
    this.#changed(bridge.agent);
  }

  #changed(agent: string): void {
    for (const fn of [...this.#listeners]) {
      try {
        fn(agent);
      } catch (err) {
        this.#log.warn({ err: (err as Error).message }, 'mcp endpoint: a change listener failed');
      }
    }
  }
}
