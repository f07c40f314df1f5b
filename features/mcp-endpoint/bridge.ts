/**
 * @module One bridge that dialled in: the SDK's MCP `Client` over the accepted WebSocket. It
 * initializes (offering the SDK's newest protocol version and accepting any it supports back to
 * 2024-11-05), lists the tools (following `nextCursor`, bounded, then cut to the agent's tool
 * budget), lists again on `tools/list_changed` (at most once a second), pings at an interval (the
 * SDK answers the bridge's pings) and when a namesake joins, and calls tools with a timeout
 * (`callTimeoutMs`) and a bound on calls in flight. Every failure of a call becomes a result the
 * model can explain; a bridge that disconnects fails its calls in flight with the reason.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { WebSocket } from 'ws';
import { z } from 'zod';
import { linkedScope } from '../../core/abort.ts';
import { CoalescedJob } from '../../core/coalesced-job.ts';
import type { Logger } from '../../core/logger.ts';
import { classifyFailure, errMessage, malformedSummary } from '../../mcp/mcp-failure.ts';
import { normalizeToolResult } from '../../mcp/normalize.ts';
import { errorResult, type ToolResult, type ToolSpec } from '../../mcp/contract/tool-source.ts';
import { CloseCodes, WebSocketPeerTransport } from '../../mcp/websocket-peer-transport.ts';
import { readAnnouncedTools } from '../../mcp/announced-tool.ts';
import { fitToolBudget } from '../../mcp/tool-budget.ts';
import { truncateForLog } from '../../core/log-fields.ts';
import type { McpEndpointLimits } from './limits.ts';

/**
 * Least time between two listings of one bridge's tools, ms: a bridge sending list_changed without
 * end makes one listing a second, not one per round trip (each may be maxListPages pages).
 */
export const RELIST_MIN_MS = 1000;

const LooseToolList = z.looseObject({ tools: z.array(z.unknown()).default([]), nextCursor: z.string().optional() });
const LooseResult = z.looseObject({});

/** Characters of a bridge tool's description the model is sent. */
const BRIDGE_DESCRIPTION_CHARS = 1024;

/** A failure that ends the bridge's connection (close code and reason). */
class BridgeRefused extends Error {
  readonly code: number;
  constructor(code: number, reason: string) {
    super(reason);
    this.code = code;
  }
}

export interface BridgeOptions {
  ws: WebSocket;
  agent: string;
  /** Unique per connection (logs, the admin API). */
  id: string;
  /** What the bridge asked to be known as (`?bridge=`), if anything. */
  requestedName?: string;
  address: string;
  limits: McpEndpointLimits;
  log: Logger;
  /** The tool list changed after the first listing. */
  onToolsChanged: () => void;
}

export class Bridge {
  readonly agent: string;
  readonly id: string;
  readonly address: string;
  readonly connectedAt = new Date().toISOString();
  /** The bridge's name: `?bridge=` when given, else its server name from initialize. */
  name = 'bridge';
  /** Its MCP server's name and version as initialize answered. */
  serverInfo: { name: string; version: string } | undefined;
  protocolVersion: string | undefined;
  readonly #o: BridgeOptions;
  readonly #client: Client;
  readonly #transport: WebSocketPeerTransport;
  readonly #log: Logger;
  #tools: ToolSpec[] = [];
  /** Exposed (safe) name → the bridge's own name. */
  #original = new Map<string, string>();
  #inFlight = 0;
  #pinger: NodeJS.Timeout | undefined;
  /** The listings after list_changed; the first listing (in `start`) counts toward their interval. */
  readonly #relister = new CoalescedJob({ run: () => this.#listAgain(), minIntervalMs: RELIST_MIN_MS });
  /** Warned once per connection that its tools are over the agent's budget (later listings: debug). */
  #budgetWarned = false;
  #closed = false;
  #closedListeners = new Set<(reason: string) => void>();

  constructor(opts: BridgeOptions) {
    this.#o = opts;
    this.agent = opts.agent;
    this.id = opts.id;
    this.address = opts.address;
    this.#log = opts.log;
    this.#transport = new WebSocketPeerTransport(opts.ws, {
      maxMessageBytes: opts.limits.maxMessageBytes,
      // A bridge closed for not answering is likely dead: it gets as long to answer the close.
      closeGraceMs: opts.limits.requestTimeoutMs,
      onDropped: (why) => this.#log.debug({ bridge: this.id, why }, 'mcp endpoint: dropped a message from the bridge'),
    });
    this.#client = new Client({ name: 'xiaozhi-server', version: '1.0.0' }, { capabilities: {} });
    // A reply to an id we never sent, or a frame the SDK cannot use: logged, the link stays.
    this.#client.onerror = (err) =>
      this.#log.debug({ bridge: this.id, err: err.message }, 'mcp endpoint: protocol error from the bridge');
    this.#client.onclose = () => this.#ended();
  }

  get tools(): readonly ToolSpec[] {
    return this.#tools;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** initialize, then the first tools/list. Throws (after closing the socket with the reason) when either fails. */
  async start(): Promise<void> {
    const t = this.#o.limits.requestTimeoutMs;
    try {
      await this.#client.connect(this.#transport, { timeout: t });
    } catch (err) {
      throw this.#refuse(new BridgeRefused(CloseCodes.Policy, `initialize failed: ${errMessage(err)}`));
    }
    const info = this.#client.getServerVersion();
    this.serverInfo = info ? { name: String(info.name), version: String(info.version) } : undefined;
    this.protocolVersion = this.#transport.protocolVersion;
    this.name = this.#o.requestedName ?? this.serverInfo?.name ?? 'bridge';
    try {
      this.#relister.started();
      await this.#refresh();
    } catch (err) {
      throw this.#refuse(
        err instanceof BridgeRefused
          ? err
          : new BridgeRefused(CloseCodes.Policy, `tools/list failed: ${errMessage(err)}`),
      );
    }
    this.#client.setNotificationHandler(ToolListChangedNotificationSchema, () => this.#relist());
    if (this.#o.limits.pingIntervalMs > 0) {
      this.#pinger = setInterval(() => {
        this.#client.ping({ timeout: t }).catch((err: unknown) => {
          if (!this.#closed) this.close(CloseCodes.GoingAway, `no answer to ping (${errMessage(err)})`);
        });
      }, this.#o.limits.pingIntervalMs);
      this.#pinger.unref();
    }
  }

  /** Closes the connection with a code and a reason the bridge sees. */
  close(code: number, reason: string): void {
    this.#transport.closeWith(code, reason);
  }

  /**
   * Whether the bridge answers a ping within requestTimeoutMs: a connection whose peer is gone
   * (a crash without a FIN, a network that dropped) looks open until something is sent to it.
   */
  async answersPing(): Promise<boolean> {
    if (this.#closed) return false;
    try {
      await this.#client.ping({ timeout: this.#o.limits.requestTimeoutMs });
      return true;
    } catch {
      return false;
    }
  }

  /** Told once, with the reason, when the connection has ended. */
  onClosed(fn: (reason: string) => void): void {
    if (this.#closed) fn(this.#transport.closeReason ?? 'closed');
    else this.#closedListeners.add(fn);
  }

  /** Calls a tool by its exposed name. Never throws. */
  async callTool(
    name: string,
    args: Record<string, unknown>,
    opts: { signal: AbortSignal; timeoutMs?: number },
  ): Promise<ToolResult> {
    const original = this.#original.get(name);
    if (original === undefined) return errorResult(`Unknown tool "${name}".`);
    if (this.#closed)
      return errorResult(
        `Tool ${name} failed: the MCP bridge "${this.name}" is not connected any more (${this.#transport.closeReason ?? 'closed'}).`,
      );
    if (this.#inFlight >= this.#o.limits.maxCallsInFlight) {
      return errorResult(
        `Tool ${name} is busy: the MCP bridge "${this.name}" already has ${this.#inFlight} calls running; try again in a moment.`,
      );
    }
    // mcpEndpoint.callTimeoutMs governs bridge calls; the caller's own bound (the model's tool
    // timeout) only ever shortens it.
    const timeout = Math.min(opts.timeoutMs ?? Number.POSITIVE_INFINITY, this.#o.limits.callTimeoutMs);
    this.#inFlight++;
    const scope = linkedScope(opts.signal);
    try {
      const raw = await this.#client.request(
        { method: 'tools/call', params: { name: original, arguments: args } },
        LooseResult,
        { signal: scope.signal, timeout },
      );
      return normalizeToolResult(raw);
    } catch (err) {
      if (opts.signal.aborted) return errorResult(`Tool ${name} was cancelled.`);
      switch (classifyFailure(err)) {
        case 'timeout':
          this.#log.warn(
            { bridge: this.name, tool: original, timeoutMs: timeout },
            'mcp endpoint: tool call timed out',
          );
          return errorResult(`Tool ${name} on the MCP bridge "${this.name}" timed out after ${timeout} ms.`);
        case 'malformed':
          return errorResult(
            `Tool ${name} on the MCP bridge "${this.name}" answered a malformed result (${malformedSummary(err)}).`,
          );
        case 'closed':
        case 'transport':
          this.#log.warn(
            { bridge: this.name, tool: original, reason: this.#transport.closeReason },
            'mcp endpoint: bridge disconnected during a call',
          );
          return errorResult(
            `Tool ${name} failed: the MCP bridge "${this.name}" disconnected during the call (${this.#transport.closeReason ?? errMessage(err)}).`,
          );
        case 'rpc':
          return errorResult(`Tool ${name} failed: ${errMessage(err)}`);
      }
    } finally {
      scope.dispose();
      this.#inFlight--;
    }
  }

  /**
   * Lists the tools again after list_changed. One listing at a time, at most one per RELIST_MIN_MS:
   * notifications arriving meanwhile are folded into a single listing after it (a flood costs two
   * listings, not one each). The hub is told only when the list did change.
   */
  #relist(): void {
    if (this.#closed) return;
    this.#relister.request();
  }

  #listAgain(): Promise<void> {
    const before = JSON.stringify(this.#tools);
    return this.#refresh()
      .then(() => {
        if (JSON.stringify(this.#tools) === before) {
          this.#log.debug(
            { bridge: this.name, tools: this.#tools.length },
            'mcp endpoint: bridge tools listed again, unchanged',
          );
          return;
        }
        this.#log.info(
          { agent: this.agent, bridge: this.name, tools: this.#tools.length },
          'mcp endpoint: bridge tools changed',
        );
        this.#o.onToolsChanged();
      })
      .catch((err: unknown) => {
        if (err instanceof BridgeRefused) this.#refuse(err);
        else
          this.#log.warn(
            { bridge: this.name, err: errMessage(err) },
            'mcp endpoint: listing the tools again failed; the old list stays',
          );
      });
  }

  async #refresh(): Promise<void> {
    const limits = this.#o.limits;
    const raw: unknown[] = [];
    const seen = new Set<string>();
    let cursor: string | undefined;
    for (let page = 0; page < limits.maxListPages; page++) {
      const r = await this.#client.request(
        { method: 'tools/list', params: cursor === undefined ? {} : { cursor } },
        LooseToolList,
        { timeout: limits.requestTimeoutMs },
      );
      raw.push(...r.tools);
      if (raw.length > limits.maxToolsPerBridge)
        throw new BridgeRefused(
          CloseCodes.Policy,
          `${raw.length} tools is over the limit of ${limits.maxToolsPerBridge} per bridge`,
        );
      cursor = r.nextCursor;
      // A bridge that ignores the cursor answers the same page again: stop there.
      if (cursor === undefined || cursor === '' || seen.has(cursor)) break;
      seen.add(cursor);
    }
    const {
      specs: tools,
      names,
      leftOut,
    } = readAnnouncedTools(raw, {
      descriptionChars: BRIDGE_DESCRIPTION_CHARS,
      schema: { maxDepth: limits.maxSchemaDepth, maxNodes: limits.maxSchemaNodes },
    });
    for (const t of leftOut)
      this.#log.warn(
        { bridge: this.name, tool: t.name.slice(0, 64), why: t.why },
        'mcp endpoint: tool left out (input schema too large)',
      );
    // One bridge alone gets no more than its agent's whole budget: what it holds here and what is
    // published for the other replicas stay bounded however large its listing was.
    const fit = fitToolBudget(tools, limits.maxToolBytes, limits.maxToolsPerAgent);
    if (fit.shortened.length > 0 || fit.dropped.length > 0) {
      const fields = {
        bridge: this.name,
        maxToolBytes: limits.maxToolBytes,
        maxToolsPerAgent: limits.maxToolsPerAgent,
        bytesAnnounced: fit.bytesBefore,
        bytesOffered: fit.bytesAfter,
        dropped: truncateForLog(fit.dropped.join(', '), 1000),
        droppedCount: fit.dropped.length,
        shortenedCount: fit.shortened.length,
      };
      if (this.#budgetWarned) this.#log.debug(fields, 'mcp endpoint: bridge tools over the budget');
      else this.#log.warn(fields, 'mcp endpoint: bridge tools over the budget');
      this.#budgetWarned = true;
    }
    const offered = new Set(fit.specs.map((t) => t.name));
    this.#tools = fit.specs;
    this.#original = new Map(
      names
        .names()
        .filter((exposed) => offered.has(exposed))
        .map((exposed) => [exposed, names.get(exposed) as string]),
    );
  }

  #refuse(err: BridgeRefused): BridgeRefused {
    this.close(err.code, err.message);
    return err;
  }

  #ended(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#pinger) clearInterval(this.#pinger);
    void this.#relister.stop();
    const reason = this.#transport.closeReason ?? 'closed';
    for (const fn of this.#closedListeners) fn(reason);
    this.#closedListeners.clear();
  }
}
