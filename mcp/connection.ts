/**
 * @module One configured MCP server for the whole process, as the rest of the server sees it: its
 * tool list (paged, refreshed on `tools/list_changed`), tool calls and resource requests, each of
 * which turns every failure into a clear result or a VoiceError. The link itself (connect,
 * reconnect, notifications, close) is McpLink's job; a request that finds the transport broken
 * tells the link, which reconnects. All device sessions share this one connection.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { z } from 'zod';
import { linkedScope } from '../core/abort.ts';
import { ErrorCode, VoiceError } from '../core/errors.ts';
import type { Logger } from '../core/logger.ts';
import { classifyFailure, errMessage, malformedSummary, type McpFailure } from './mcp-failure.ts';
import { McpLink, type ReconnectPolicy } from './mcp-link.ts';
import { normalizeToolResult } from './normalize.ts';
import { passesFilter } from './name-patterns.ts';
import type { McpServerConfig } from './server-config.ts';
import { emptyStats, type McpServerState, type McpServerStats, type McpStateChange } from './stats.ts';
import type {
  JsonSchema,
  ResourceContents,
  ResourceInfo,
  ResourceTemplateInfo,
  ToolResult,
} from './contract/tool-source.ts';
import { errorResult, type ResourceSource } from './contract/tool-source.ts';
import { createMcpResourceSource } from './resource-source.ts';
import type { ClientInfo, McpTransportKind } from './transports.ts';

/** A tool as the server described it (name unsanitized), after our filters. */
export interface McpToolInfo {
  name: string;
  description?: string;
  inputSchema: JsonSchema;
}

export interface McpConnectionOptions {
  name: string;
  config: McpServerConfig;
  log: Logger;
  clientInfo: ClientInfo;
  reconnect?: ReconnectPolicy;
  /** Bound on the initialize handshake, in ms. */
  connectTimeoutMs?: number;
  /** Debounce for `tools/list_changed` bursts, in ms. */
  listChangedDebounceMs?: number;
  /** Cap on list pages followed (protects against a server whose cursors loop). */
  maxPages?: number;
  /** Hard cap on one call even while progress keeps resetting its timeout, in ms. */
  maxTotalCallMs?: number;
}

export interface McpCallOptions {
  signal: AbortSignal;
  timeoutMs?: number;
}

// Lenient result schemas: the SDK's strict ones throw on one odd block and lose the whole reply.
const LooseCallResult = z.looseObject({});
const LooseToolList = z.looseObject({ tools: z.array(z.unknown()).default([]), nextCursor: z.string().optional() });
const LooseResourceList = z.looseObject({
  resources: z.array(z.unknown()).default([]),
  nextCursor: z.string().optional(),
});
const LooseTemplateList = z.looseObject({
  resourceTemplates: z.array(z.unknown()).default([]),
  nextCursor: z.string().optional(),
});
const LooseReadResult = z.looseObject({ contents: z.array(z.unknown()).default([]) });
const EmptyResult = z.looseObject({});

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function optStr(o: Record<string, unknown>, k: string): string | undefined {
  const v = o[k];
  return typeof v === 'string' ? v : undefined;
}

/** One raw request with a lenient result schema, a timeout and a per-request child signal. */
async function rpc<T extends z.ZodType>(
  client: Client,
  method: string,
  params: Record<string, unknown>,
  schema: T,
  timeout: number,
  signal?: AbortSignal,
): Promise<z.output<T>> {
  // A scope per request: the SDK adds an abort listener to the signal it gets and never removes
  // it, so it must not be the turn's own signal.
  const scope = linkedScope(signal);
  try {
    return await client.request({ method, params } as never, schema, { timeout, signal: scope.signal });
  } finally {
    scope.dispose();
  }
}

export class McpConnection {
  readonly name: string;
  readonly config: McpServerConfig;
  readonly stats: McpServerStats = emptyStats();
  /** This server's resources for the paged stream and subscriptions (the one ResourceSource per server). */
  readonly resources: ResourceSource;
  #log: Logger;
  #opts: McpConnectionOptions;
  #link: McpLink;
  #tools: McpToolInfo[] = [];
  #toolsVersion = 0;
  #toolListeners = new Set<() => void>();

  constructor(opts: McpConnectionOptions) {
    this.name = opts.name;
    this.config = opts.config;
    this.#opts = opts;
    this.#log = opts.log.child({ mcpServer: opts.name });
    this.resources = createMcpResourceSource(this);
    this.#link = new McpLink({
      name: opts.name,
      config: opts.config,
      log: this.#log,
      clientInfo: opts.clientInfo,
      stats: this.stats,
      ...(opts.reconnect ? { reconnect: opts.reconnect } : {}),
      ...(opts.connectTimeoutMs !== undefined ? { connectTimeoutMs: opts.connectTimeoutMs } : {}),
      ...(opts.listChangedDebounceMs !== undefined ? { listChangedDebounceMs: opts.listChangedDebounceMs } : {}),
      afterConnect: () => this.#refreshTools(),
      onToolsListChanged: () => {
        this.#refreshTools().catch((err: unknown) =>
          this.#log.warn({ err: errMessage(err) }, 'mcp tool list refresh failed'),
        );
      },
    });
  }

  get state(): McpServerState {
    return this.#link.state;
  }
  get lastError(): string | undefined {
    return this.#link.lastError;
  }
  get transportKind(): McpTransportKind | undefined {
    return this.#link.transportKind;
  }
  /** Child process id of a stdio server while connected. */
  get pid(): number | undefined {
    return this.#link.pid;
  }
  /** Bumped whenever the tool list changes (names must be re-mapped). */
  get toolsVersion(): number {
    return this.#toolsVersion;
  }
  /** The filtered tool list as last fetched (kept while reconnecting). */
  tools(): McpToolInfo[] {
    return this.#tools;
  }
  /** What the server said it supports (undefined until connected). */
  capabilities(): { resources: boolean; subscribe: boolean; resourcesListChanged: boolean } {
    return this.#link.capabilities();
  }
  onStateChange(fn: (c: McpStateChange) => void): () => void {
    return this.#link.onStateChange(fn);
  }
  onToolsChanged(fn: () => void): () => void {
    this.#toolListeners.add(fn);
    return () => this.#toolListeners.delete(fn);
  }
  /** `notifications/resources/updated` (uri as the server sent it). */
  onResourceUpdated(fn: (uri: string) => void): () => void {
    return this.#link.onResourceUpdated(fn);
  }
  /** `notifications/resources/list_changed`, and every (re)connect (server-side session state is new). */
  onResourcesListChanged(fn: () => void): () => void {
    return this.#link.onResourcesListChanged(fn);
  }

  /**
   * Starts connecting. Resolves after the first attempt, whatever its outcome: a failure is logged
   * and retried in the background with backoff. Never throws.
   */
  start(): Promise<void> {
    return this.#link.start();
  }

  /** Closes the client and makes sure a stdio child is gone; no reconnect afterwards. Bounded (~5 s). */
  close(): Promise<void> {
    return this.#link.close();
  }

  async #listPaged<T>(
    method: 'tools/list' | 'resources/list' | 'resources/templates/list',
    schema: z.ZodType<{ nextCursor?: string | undefined } & Record<string, unknown>>,
    key: string,
    signal?: AbortSignal,
  ): Promise<T[]> {
    const client = this.#link.requireClient();
    const out: T[] = [];
    const seen = new Set<string>();
    let cursor: string | undefined;
    const maxPages = this.#opts.maxPages ?? 100;
    for (let page = 0; page < maxPages; page++) {
      const params = cursor === undefined ? {} : { cursor };
      const r = await rpc(client, method, params, schema, this.config.timeoutMs, signal);
      const items = r[key];
      if (Array.isArray(items)) out.push(...(items as T[]));
      cursor = r.nextCursor;
      if (cursor === undefined || cursor === '') return out;
      if (seen.has(cursor)) {
        this.#log.warn({ method, cursor }, 'mcp list cursor repeated, stopping');
        return out;
      }
      seen.add(cursor);
    }
    this.#log.warn({ method, maxPages }, 'mcp list page cap reached');
    return out;
  }

  async #refreshTools(): Promise<void> {
    const raw = await this.#listPaged<unknown>('tools/list', LooseToolList, 'tools');
    const { includeTools, excludeTools } = this.config;
    const tools: McpToolInfo[] = [];
    const names = new Set<string>();
    for (const t of raw) {
      if (!isRecord(t) || typeof t.name !== 'string' || t.name === '' || names.has(t.name)) continue;
      // Tools that require the tasks extension cannot be called with plain tools/call.
      if (isRecord(t.execution) && t.execution.taskSupport === 'required') continue;
      if (!passesFilter(t.name, includeTools, excludeTools)) continue;
      names.add(t.name);
      const schema: JsonSchema = isRecord(t.inputSchema)
        ? { ...(t.inputSchema as JsonSchema) }
        : { type: 'object', properties: {} };
      if (schema.type === undefined) schema.type = 'object';
      const desc = optStr(t, 'description') ?? optStr(t, 'title');
      tools.push(
        desc === undefined
          ? { name: t.name, inputSchema: schema }
          : { name: t.name, description: desc, inputSchema: schema },
      );
    }
    this.#tools = tools;
    this.#toolsVersion++;
    this.#log.debug({ tools: tools.length, listed: raw.length }, 'mcp tool list refreshed');
    for (const fn of this.#toolListeners) fn();
  }

  /** Calls a tool by its server-side name. Never throws: every failure is an `isError` result. */
  async callTool(tool: string, args: Record<string, unknown>, opts: McpCallOptions): Promise<ToolResult> {
    const client = this.#link.client;
    if (!client || this.#link.state !== 'ready') {
      return errorResult(
        `MCP server "${this.name}" is not connected right now (${this.#link.state}${this.#link.lastError ? `: ${this.#link.lastError}` : ''}); try again later.`,
      );
    }
    if (opts.signal.aborted) return errorResult(`Tool ${tool} was cancelled before it started.`);
    const timeout = opts.timeoutMs ?? this.config.timeoutMs;
    const started = performance.now();
    this.stats.calls++;
    const scope = linkedScope(opts.signal);
    try {
      const raw = await client.request(
        { method: 'tools/call', params: { name: tool, arguments: args } },
        LooseCallResult,
        {
          signal: scope.signal,
          timeout,
          resetTimeoutOnProgress: true,
          // Progress only matters for resetting the timeout; the SDK needs a callback to ask for it.
          onprogress: () => {},
          maxTotalTimeout: Math.max(timeout, this.#opts.maxTotalCallMs ?? 300_000),
        },
      );
      const result = normalizeToolResult(raw);
      if (result.isError) this.stats.errors++;
      return result;
    } catch (err) {
      this.stats.errors++;
      const msg = errMessage(err);
      if (opts.signal.aborted) return errorResult(`Tool ${tool} was cancelled.`);
      const kind = classifyFailure(err);
      this.#reconnectIfLinkBroken(kind, msg);
      switch (kind) {
        case 'timeout':
          this.stats.timeouts++;
          this.#log.warn({ tool, timeoutMs: timeout }, 'mcp tool call timed out');
          return errorResult(`Tool ${tool} on server "${this.name}" timed out after ${timeout} ms.`);
        case 'malformed': {
          const why = malformedSummary(err);
          this.#log.warn({ tool, err: why }, 'mcp tool call answered a malformed result');
          return errorResult(`Tool ${tool} on server "${this.name}" answered a malformed result (${why}).`);
        }
        case 'closed':
        case 'transport': {
          this.#log.warn({ tool, err: msg }, 'mcp tool call lost the connection');
          return errorResult(
            `Tool ${tool} failed: MCP server "${this.name}" disconnected during the call (${this.#whyClosed(kind, msg)}).`,
          );
        }
        case 'rpc':
          this.#log.info({ tool, err: msg }, 'mcp tool call returned an error');
          return errorResult(`Tool ${tool} failed: ${msg}`);
      }
    } finally {
      scope.dispose();
      this.stats.latencyMsSum += performance.now() - started;
      this.stats.latencyCount++;
    }
  }

  /**
   * Why a request lost its connection: the SDK says only "Connection closed" to the requests it
   * fails when the link is dropped; the link knows why (set just before they are failed).
   */
  #whyClosed(kind: McpFailure, msg: string): string {
    const why = this.#link.lastError;
    return kind === 'closed' && this.#link.state !== 'ready' && why !== undefined ? why : msg;
  }

  /** Only a broken transport needs a new client; a bad or failed reply leaves the link alone. */
  #reconnectIfLinkBroken(kind: McpFailure, msg: string): void {
    if (kind === 'transport') this.#link.dropAndReconnect(msg);
  }

  /** Handles a failed resource request: reconnects when the link broke, then describes the failure. */
  #requestFailed(err: unknown, what: string, signal?: AbortSignal): VoiceError {
    if (err instanceof VoiceError) return err;
    const msg = errMessage(err);
    if (signal?.aborted) return new VoiceError(ErrorCode.Aborted, 'aborted', { cause: err });
    const kind = classifyFailure(err);
    this.#reconnectIfLinkBroken(kind, msg);
    switch (kind) {
      case 'timeout':
        return new VoiceError(ErrorCode.Timeout, `${what} on MCP server "${this.name}" timed out`, {
          retryable: true,
          cause: err,
        });
      case 'malformed':
        return new VoiceError(
          ErrorCode.ToolFailed,
          `${what}: MCP server "${this.name}" answered a malformed result (${malformedSummary(err)})`,
          { cause: err },
        );
      case 'closed':
      case 'transport':
        return new VoiceError(
          ErrorCode.ProviderUnavailable,
          `${what}: MCP server "${this.name}" unreachable (${this.#whyClosed(kind, msg)})`,
          { retryable: true, cause: err },
        );
      case 'rpc':
        return new VoiceError(ErrorCode.ToolFailed, `${what} failed: ${msg}`, { cause: err });
    }
  }

  /** One page of `resources/list` (for the model-facing list tool, which pages itself). */
  async listResourcesPage(
    cursor: string | undefined,
    signal?: AbortSignal,
  ): Promise<{ resources: ResourceInfo[]; nextCursor?: string }> {
    try {
      const client = this.#link.requireClient();
      const r = await rpc(
        client,
        'resources/list',
        cursor ? { cursor } : {},
        LooseResourceList,
        this.config.timeoutMs,
        signal,
      );
      const resources = r.resources.map(toResourceInfo).filter((x): x is ResourceInfo => x !== undefined);
      return r.nextCursor ? { resources, nextCursor: r.nextCursor } : { resources };
    } catch (err) {
      throw this.#requestFailed(err, 'resources/list', signal);
    }
  }

  /** Every page of `resources/list`. */
  async listResources(signal?: AbortSignal): Promise<ResourceInfo[]> {
    try {
      const raw = await this.#listPaged<unknown>('resources/list', LooseResourceList, 'resources', signal);
      return raw.map(toResourceInfo).filter((x): x is ResourceInfo => x !== undefined);
    } catch (err) {
      throw this.#requestFailed(err, 'resources/list', signal);
    }
  }

  /** Every page of `resources/templates/list`. */
  async listResourceTemplates(signal?: AbortSignal): Promise<ResourceTemplateInfo[]> {
    try {
      const raw = await this.#listPaged<unknown>(
        'resources/templates/list',
        LooseTemplateList,
        'resourceTemplates',
        signal,
      );
      const out: ResourceTemplateInfo[] = [];
      for (const t of raw) {
        if (!isRecord(t) || typeof t.uriTemplate !== 'string') continue;
        const info: ResourceTemplateInfo = { uriTemplate: t.uriTemplate };
        for (const k of ['name', 'description', 'mimeType'] as const) {
          const v = optStr(t, k);
          if (v !== undefined) info[k] = v;
        }
        out.push(info);
      }
      return out;
    } catch (err) {
      throw this.#requestFailed(err, 'resources/templates/list', signal);
    }
  }

  /**
   * `resources/read`. `args` goes into the raw params as the non-standard `arguments` field some
   * (mcp-go based) servers read; SDK servers drop it. Throws a VoiceError on any failure.
   */
  async readResource(
    uri: string,
    opts: { signal?: AbortSignal; timeoutMs?: number; arguments?: Record<string, unknown> } = {},
  ): Promise<ResourceContents[]> {
    try {
      const client = this.#link.requireClient();
      const params: Record<string, unknown> = { uri };
      if (opts.arguments) params.arguments = opts.arguments;
      const r = await rpc(
        client,
        'resources/read',
        params,
        LooseReadResult,
        opts.timeoutMs ?? this.config.timeoutMs,
        opts.signal,
      );
      const out: ResourceContents[] = [];
      for (const c of r.contents) {
        if (!isRecord(c)) continue;
        const entry: ResourceContents = { uri: optStr(c, 'uri') ?? uri };
        const mimeType = optStr(c, 'mimeType');
        if (mimeType !== undefined) entry.mimeType = mimeType;
        if (typeof c.text === 'string') entry.text = c.text;
        else if (typeof c.blob === 'string') entry.blob = c.blob;
        else continue;
        out.push(entry);
      }
      return out;
    } catch (err) {
      throw this.#requestFailed(err, `resources/read ${uri}`, opts.signal);
    }
  }

  async subscribeResource(uri: string, signal?: AbortSignal): Promise<void> {
    try {
      await rpc(this.#link.requireClient(), 'resources/subscribe', { uri }, EmptyResult, this.config.timeoutMs, signal);
    } catch (err) {
      throw this.#requestFailed(err, `resources/subscribe ${uri}`, signal);
    }
  }

  async unsubscribeResource(uri: string): Promise<void> {
    const client = this.#link.client;
    if (!client) return; // subscriptions die with the server-side session anyway
    try {
      await client.request({ method: 'resources/unsubscribe', params: { uri } }, EmptyResult, {
        timeout: this.config.timeoutMs,
      });
    } catch (err) {
      this.#log.debug({ uri, err: errMessage(err) }, 'mcp unsubscribe failed');
    }
  }
}

function toResourceInfo(r: unknown): ResourceInfo | undefined {
  if (!isRecord(r) || typeof r.uri !== 'string') return undefined;
  const info: ResourceInfo = { uri: r.uri };
  for (const k of ['name', 'title', 'description', 'mimeType'] as const) {
    const v = optStr(r, k);
    if (v !== undefined) info[k] = v;
  }
  if (typeof r.size === 'number' && Number.isFinite(r.size)) info.size = r.size;
  return info;
}
