/**
 * @module The bridges connected to this process, by agent. A bridge joins once it has initialized
 * and listed its tools; the tools of an agent's bridges are merged into one ToolSource (a name
 * offered by two bridges is exposed as `<bridge>__<tool>` for the later one, the prefix made
 * distinct when bridges share a name). A new connection replaces an earlier one of the same agent
 * and name (its `?bridge=` parameter, else the server name its initialize answered) only when that
 * one no longer answers a ping: live connections with one name are bridges of their own.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { CoalescedJob } from '../../core/coalesced-job.ts';
import { truncateForLog } from '../../core/log-fields.ts';
import type { Logger } from '../../core/logger.ts';
import { mergeToolNames } from '../../mcp/merge-tool-names.ts';
import { fitToolBudget } from '../../mcp/tool-budget.ts';
import { errorResult, type ToolResult, type ToolSource, type ToolSpec } from '../../mcp/contract/tool-source.ts';
import type { McpRelay, PublishedBridge } from '../../store/mcp-endpoint-relay.ts';
import { CloseCodes } from '../../mcp/websocket-peer-transport.ts';
import type { Bridge } from './bridge.ts';
import type { McpEndpointLimits } from './limits.ts';

/** What the admin API shows of one bridge. */
export interface BridgeStatus {
  id: string;
  /** The server process it is connected to. */
  replica: string;
  name: string;
  server: { name: string; version: string } | null;
  protocolVersion: string | null;
  address: string;
  connectedAt: string;
  tools: string[];
}

/** How the bridges of one replica serve the devices of the others (through the database). */
export interface RelayOptions {
  relay: McpRelay;
  /** How often this process looks for calls queued for its bridges, and for answers, ms. */
  pollMs?: number;
  /** How often this process marks its published bridges as live (their heartbeat), ms. */
  heartbeatMs?: number;
  /** Least time between two writes of this process's bridges (changes are coalesced), ms. */
  publishMinMs?: number;
  /** How long one read of an agent's bridges on the other replicas serves its listings, ms. */
  remoteTtlMs?: number;
}

/** Where a tool of the agent's is called: a bridge here, or one on another replica. */
type Target = { bridge: Bridge } | { remote: PublishedBridge };

function isToolSpec(v: unknown): v is ToolSpec {
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof (v as ToolSpec).name === 'string' &&
    typeof (v as ToolSpec).inputSchema === 'object'
  );
}

function isToolResult(v: unknown): v is ToolResult {
  return (
    typeof v === 'object' &&
    v !== null &&
    Array.isArray((v as ToolResult).content) &&
    typeof (v as ToolResult).isError === 'boolean'
  );
}

export class BridgeHub {
  readonly limits: McpEndpointLimits;
  /** This process among the replicas (what it publishes its bridges as). */
  readonly owner = `${hostname()}:${process.pid}#${randomBytes(4).toString('hex')}`;
  readonly #log: Logger;
  readonly #byAgent = new Map<string, Bridge[]>();
  /** Every connection open now, joined or not. */
  readonly #open = new Set<Bridge>();
  readonly #perAddress = new Map<string, number>();
  readonly #listeners = new Set<(agent: string) => void>();
  readonly #relay: McpRelay | undefined;
  readonly #pollMs: number;
  readonly #remoteTtlMs: number;
  /** Per agent: the last read of its bridges on the other replicas (shared by its sessions' listings). */
  readonly #remoteRead = new Map<string, { at: number; bridges: Promise<PublishedBridge[]> }>();
  readonly #timers: NodeJS.Timeout[] = [];
  /** The writes of this process's bridges (and, between them, the heartbeats). */
  readonly #publisher: CoalescedJob;
  /** What the store holds for this process (its bridges as JSON): an unchanged state is not written again. */
  #published = '[]';
  /** Per agent over its tool budget: what was last warned of (one warning per change, not per turn). */
  readonly #budgetWarned = new Map<string, string>();
  #polling = false;
  #stopped = false;

  constructor(limits: McpEndpointLimits, log: Logger, relay?: RelayOptions) {
    this.limits = limits;
    this.#log = log;
    this.#relay = relay?.relay;
    this.#pollMs = relay?.pollMs ?? 150;
    this.#publisher = new CoalescedJob({ run: () => this.#writeBridges(), minIntervalMs: relay?.publishMinMs ?? 1000 });
    this.#remoteTtlMs = relay?.remoteTtlMs ?? 1000;
    if (this.#relay) {
      const beat = setInterval(() => this.#heartbeat(), relay?.heartbeatMs ?? 10_000);
      const poll = setInterval(() => void this.#serveQueued(), this.#pollMs);
      beat.unref();
      poll.unref();
      this.#timers.push(beat, poll);
    }
  }

  /** Stops the relay and removes what this process published. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    for (const t of this.#timers) clearInterval(t);
    await this.#publisher.stop();
    await this.#relay
      ?.clear(this.owner)
      .catch((err: unknown) =>
        this.#log.warn({ err: (err as Error).message }, 'mcp endpoint: could not remove the published bridges'),
      );
  }

  /** Whether one more connection from `address` fits; counts it when it does (release with `released`). */
  admit(address: string): boolean {
    const n = this.#perAddress.get(address) ?? 0;
    if (n >= this.limits.maxConnectionsPerAddress) return false;
    this.#perAddress.set(address, n + 1);
    return true;
  }

  /** Endpoint connections open from `address`. */
  connections(address: string): number {
    return this.#perAddress.get(address) ?? 0;
  }

  released(address: string): void {
    const n = (this.#perAddress.get(address) ?? 1) - 1;
    if (n <= 0) this.#perAddress.delete(address);
    else this.#perAddress.set(address, n);
  }

  /**
   * Adds a bridge that has initialized and listed its tools; false when it is refused (over
   * maxBridgesPerAgent) or closed meanwhile. A bridge's earlier connections are those of the same
   * agent and name; each is asked for a ping first, and only one that does not answer (its peer is
   * gone) is replaced. One that answers is a bridge of its own (two copies of one program, or
   * FastMCP servers left at their default name): both serve.
   */
  async join(bridge: Bridge): Promise<boolean> {
    const namesakes = this.bridgesOf(bridge.agent).filter((b) => b.name === bridge.name);
    const alive = await Promise.all(namesakes.map((b) => b.answersPing()));
    const replaced = new Set(namesakes.filter((_, i) => alive[i] !== true));
    for (const old of replaced) old.close(CloseCodes.Normal, 'replaced by a new connection of the same bridge');
    if (bridge.closed) return false;
    const kept = this.bridgesOf(bridge.agent).filter((b) => !replaced.has(b) && !b.closed);
    if (kept.length >= this.limits.maxBridgesPerAgent) {
      bridge.close(CloseCodes.Policy, `agent already has ${kept.length} bridges connected (the limit)`);
      return false;
    }
    if (replaced.size < namesakes.length)
      this.#log.info(
        { agent: bridge.agent, bridge: bridge.name, namesakes: namesakes.length - replaced.size },
        'mcp endpoint: another live bridge has this name; both serve',
      );
    this.#byAgent.set(bridge.agent, [...kept, bridge]);
    bridge.onClosed(() => this.#leave(bridge));
    this.#changed(bridge.agent);
    return true;
  }

  /** Closes every bridge of `agent` (its token was revoked or rotated). */
  closeAgent(agent: string, reason: string): number {
    const list = this.#byAgent.get(agent) ?? [];
    for (const b of list) b.close(CloseCodes.Policy, reason);
    return list.length;
  }

  /** A new connection, from its upgrade (also while it initializes) until it closes: `closeAll` reaches it. */
  opened(bridge: Bridge): void {
    this.#open.add(bridge);
    bridge.onClosed(() => this.#open.delete(bridge));
  }

  /** Closes every connection, joined or still initializing (the server stops): 1001, with the reason. */
  closeAll(): void {
    for (const b of this.#open) b.close(CloseCodes.GoingAway, 'server shutting down');
  }

  bridgesOf(agent: string): readonly Bridge[] {
    return this.#byAgent.get(agent) ?? [];
  }

  status(agent: string): BridgeStatus[] {
    return this.bridgesOf(agent).map((b) => ({
      id: b.id,
      replica: this.owner,
      name: b.name,
      server: b.serverInfo ?? null,
      protocolVersion: b.protocolVersion ?? null,
      address: b.address,
      connectedAt: b.connectedAt,
      tools: b.tools.map((t) => t.name),
    }));
  }

  /** The agent's bridges on this process and, through the store, on the other replicas. */
  async statusEverywhere(agent: string): Promise<BridgeStatus[]> {
    const remote = (await this.#remote(agent)).map((r) => ({
      id: r.id,
      replica: r.owner,
      name: r.name,
      server: null,
      protocolVersion: null,
      address: r.address,
      connectedAt: r.connectedAt,
      tools: r.tools.filter(isToolSpec).map((t) => t.name),
    }));
    return [...this.status(agent), ...remote];
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
    let routes = new Map<string, { group: Target; original: string }>();
    let listedFor: string | undefined;
    const list = async (): Promise<ToolSpec[]> => {
      const agent = agentOf();
      // Each bridge's prefix is its name, made distinct among the agent's bridges (`calc`, `calc_2`):
      // bridges with one name are still told apart.
      const merged = mergeToolNames<Target>([
        ...this.bridgesOf(agent).map((bridge) => ({ name: bridge.name, specs: bridge.tools, group: { bridge } })),
        ...(await this.#remote(agent)).map((remote) => ({
          name: remote.name,
          specs: remote.tools.filter(isToolSpec),
          group: { remote },
        })),
      ]);
      const out = merged.specs;
      const next = merged.routes;
      const fit = this.#withinBudget(agent, out);
      const offered = new Set(fit.map((t) => t.name));
      // A tool left out for the budget is not callable either: the model never saw it.
      routes = new Map([...next].filter(([name]) => offered.has(name)));
      listedFor = agent;
      return fit;
    };
    return {
      listTools: () => list(),
      callTool: async (name, args, opts): Promise<ToolResult> => {
        if (listedFor !== agentOf()) await list();
        const route = routes.get(name);
        if (!route) return errorResult(`Unknown tool "${name}".`);
        if ('bridge' in route.group) return route.group.bridge.callTool(route.original, args, opts);
        return this.#callRemote(route.group.remote, route.original, args, opts.signal);
      },
    };
  }

  /**
   * The agent's bridge tools within maxToolBytes and maxToolsPerAgent (`mcp/tool-budget.ts`, as the
   * device's own tools). Warned once per change of what is cut, not at every turn's listing.
   */
  #withinBudget(agent: string, specs: ToolSpec[]): ToolSpec[] {
    const { maxToolBytes, maxToolsPerAgent } = this.limits;
    const fit = fitToolBudget(specs, maxToolBytes, maxToolsPerAgent);
    if (fit.shortened.length === 0 && fit.dropped.length === 0) {
      this.#budgetWarned.delete(agent);
      return fit.specs;
    }
    const what = `${fit.bytesBefore}:${specs.length}:${fit.dropped.join(',')}`;
    if (this.#budgetWarned.get(agent) !== what) {
      this.#budgetWarned.set(agent, what);
      this.#log.warn(
        {
          agent,
          maxToolBytes,
          maxToolsPerAgent,
          bytesAnnounced: fit.bytesBefore,
          bytesOffered: fit.bytesAfter,
          toolsAnnounced: specs.length,
          dropped: truncateForLog(fit.dropped.join(', '), 1000),
          droppedCount: fit.dropped.length,
          shortenedCount: fit.shortened.length,
        },
        "mcp endpoint: the agent's bridge tools are over the budget",
      );
    }
    return fit.specs;
  }

  /**
   * The agent's bridges on the other replicas. One read serves every listing of the agent for
   * remoteTtlMs (a turn's listing does not query the database each time); expired reads are
   * removed, so the map holds at most the agents listed within that interval.
   */
  #remote(agent: string): Promise<PublishedBridge[]> {
    const relay = this.#relay;
    if (!relay) return Promise.resolve([]);
    const now = performance.now();
    for (const [a, r] of this.#remoteRead) if (now - r.at >= this.#remoteTtlMs) this.#remoteRead.delete(a);
    const cached = this.#remoteRead.get(agent);
    if (cached) return cached.bridges;
    const bridges = relay.remote(agent, this.owner).catch((err: unknown) => {
      this.#log.warn({ err: (err as Error).message }, "mcp endpoint: could not read the other replicas' bridges");
      this.#remoteRead.delete(agent);
      return [];
    });
    this.#remoteRead.set(agent, { at: now, bridges });
    return bridges;
  }

  /** A call to a bridge on another replica: queued in the database, answered by that replica. */
  async #callRemote(
    remote: PublishedBridge,
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<ToolResult> {
    const relay = this.#relay;
    if (!relay) return errorResult(`Tool ${tool} failed: the MCP bridge "${remote.name}" is not connected here.`);
    const id = randomUUID();
    // The owner runs it with its own call timeout; a little more for the trips through the database.
    const deadline = performance.now() + this.limits.callTimeoutMs + 5000;
    try {
      await relay.enqueue(remote.owner, { id, bridgeId: remote.id, tool, args });
      while (!signal.aborted && performance.now() < deadline) {
        await new Promise((r) => setTimeout(r, this.#pollMs));
        const result = await relay.take(id);
        if (result !== undefined)
          return isToolResult(result)
            ? result
            : errorResult(`Tool ${tool} on the MCP bridge "${remote.name}" answered a malformed result.`);
      }
      await relay.drop(id);
      return signal.aborted
        ? errorResult(`Tool ${tool} was cancelled.`)
        : errorResult(
            `Tool ${tool} failed: the replica the MCP bridge "${remote.name}" is connected to did not answer in time.`,
          );
    } catch (err) {
      return errorResult(
        `Tool ${tool} failed: could not reach the MCP bridge "${remote.name}" on another replica (${(err as Error).message}).`,
      );
    }
  }

  /** Runs the calls other replicas queued for this process's bridges. */
  async #serveQueued(): Promise<void> {
    const relay = this.#relay;
    if (!relay || this.#polling || this.#byAgent.size === 0) return;
    this.#polling = true;
    try {
      const calls = await relay.claim(this.owner);
      for (const call of calls) {
        const bridge = [...this.#byAgent.values()].flat().find((b) => b.id === call.bridgeId);
        void (async () => {
          const result = bridge
            ? await bridge.callTool(call.tool, call.args, { signal: new AbortController().signal })
            : errorResult(`Tool ${call.tool} failed: its MCP bridge is not connected any more.`);
          await relay.finish(call.id, {
            content: result.content,
            isError: result.isError,
            ...(result.structuredContent ? { structuredContent: result.structuredContent } : {}),
          });
        })().catch((err: unknown) =>
          this.#log.warn({ err: (err as Error).message }, 'mcp endpoint: could not answer a forwarded call'),
        );
      }
    } catch (err) {
      this.#log.warn({ err: (err as Error).message }, 'mcp endpoint: could not read forwarded calls');
    } finally {
      this.#polling = false;
    }
  }

  /**
   * Publishes this process's bridges when they differ from what the store holds. Coalesced: one
   * write at a time, at most one per publishMinMs, the latest state last.
   */
  #publish(): void {
    if (!this.#relay || this.#stopped) return;
    this.#publisher.request();
  }

  /** One write of this process's bridges; undefined when the store holds them already. */
  #writeBridges(): Promise<void> | undefined {
    const relay = this.#relay;
    if (!relay) return undefined;
    const bridges = [...this.#byAgent.values()].flat().map((b) => ({
      id: b.id,
      agent: b.agent,
      name: b.name,
      address: b.address,
      connectedAt: b.connectedAt,
      tools: [...b.tools],
    }));
    const text = JSON.stringify(bridges);
    if (text === this.#published) return undefined;
    return relay
      .publish(this.owner, bridges)
      .then(() => {
        this.#published = text;
      })
      .catch((err: unknown) =>
        this.#log.warn(
          { err: (err as Error).message },
          'mcp endpoint: could not publish the bridges for the other replicas',
        ),
      );
  }

  /**
   * Keeps what this process published live for the other replicas. No tool list is written: only
   * a change is (and one that failed to be written is tried again here). Nothing at all while
   * this process has no bridges.
   */
  #heartbeat(): void {
    const relay = this.#relay;
    if (!relay || this.#stopped || !this.#publisher.idle) return;
    const bridges = [...this.#byAgent.values()].flat();
    if (bridges.length === 0 && this.#published === '[]') return;
    if (bridges.length === 0 || this.#published === '[]') {
      this.#publish();
      return;
    }
    this.#publisher.holdFor(() =>
      relay
        .heartbeat(this.owner)
        .catch((err: unknown) =>
          this.#log.warn({ err: (err as Error).message }, 'mcp endpoint: could not mark the published bridges as live'),
        )
        // A change that came during the heartbeat, or one whose write failed before.
        .finally(() => this.#publish()),
    );
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
    this.#publish();
    for (const fn of [...this.#listeners]) {
      try {
        fn(agent);
      } catch (err) {
        this.#log.warn({ err: (err as Error).message }, 'mcp endpoint: a change listener failed');
      }
    }
  }
}
