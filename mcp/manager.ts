/**
 * @module The process-wide MCP manager: one connection per configured server, shared by all device
 * sessions. Gives the lead a ToolSource per session, a ResourceSource per server, the resource
 * context for Think, status and stats for logs and metrics, and a bounded close.
 */
import type { Logger } from '../core/logger.ts';
import { McpConnection } from './connection.ts';
import type { ReconnectPolicy } from './mcp-link.ts';
import { McpToolCatalog, McpToolSource } from './mcp-tool-source.ts';
import { ResourceCache } from './resource-cache.ts';
import { buildResourceContext, formatContextBlock, type BuildContextOptions } from './resource-context.ts';
import type { McpServersConfig } from './server-config.ts';
import type { McpServerState, McpServerStats, McpStateChange } from './stats.ts';
import type { ClientInfo, McpTransportKind } from './transports.ts';

export interface McpManagerOptions {
  servers: McpServersConfig;
  log: Logger;
  clientInfo?: ClientInfo;
  /** Backoff for reconnects (defaults 500 ms doubling to 30 s). */
  reconnect?: ReconnectPolicy;
  /** Bound on one initialize handshake, in ms (default 15 000). */
  connectTimeoutMs?: number;
  /** Debounce for `tools/list_changed`, in ms (default 300). */
  listChangedDebounceMs?: number;
  /** Resource cache bounds, and the clock its expiry reads (tests). */
  cache?: { maxEntries?: number; maxChars?: number; now?: () => number };
}

export interface McpServerStatus {
  name: string;
  state: McpServerState;
  /** Tools currently exposed from this server (after filters). */
  tools: number;
  transport?: McpTransportKind;
  /** Child process id of a connected stdio server. */
  pid?: number;
  lastError?: string;
}

export interface McpManager {
  /** Connects every enabled server in parallel; a failing one is logged and retried in the background. Never throws. */
  start(): Promise<void>;
  /** A fresh ToolSource for one device session: same tools, its own memory of linked resource URIs. */
  sessionView(): McpToolSource;
  /** Context to inject before Think, per each server's policy and budget (read through the cache): one string per resource. */
  contextFor(opts?: BuildContextOptions): Promise<string[]>;
  status(): McpServerStatus[];
  stats(): Record<string, McpServerStats>;
  /** Subscribes to connection state changes (for metrics); returns an unsubscribe function. */
  onStateChange(fn: (change: McpStateChange) => void): () => void;
  /** The shared resource cache (diagnostics, tests). */
  readonly cache: ResourceCache;
  /** Closes every client and kills every child process. Bounded (about 5 s). */
  close(): Promise<void>;
}

/** Creates the manager; nothing connects until `start()`. */
export function createMcpManager(opts: McpManagerOptions): McpManager {
  const log = opts.log.child({ component: 'mcp' });
  const clientInfo = opts.clientInfo ?? { name: 'xiaozhi-ts-server', version: '0.1.0' };
  const conns: McpConnection[] = [];
  for (const [name, config] of Object.entries(opts.servers)) {
    if (!config.enabled) {
      log.info({ server: name }, 'mcp server disabled in config');
      continue;
    }
    conns.push(
      new McpConnection({
        name,
        config,
        log,
        clientInfo,
        ...(opts.reconnect ? { reconnect: opts.reconnect } : {}),
        ...(opts.connectTimeoutMs === undefined ? {} : { connectTimeoutMs: opts.connectTimeoutMs }),
        ...(opts.listChangedDebounceMs === undefined ? {} : { listChangedDebounceMs: opts.listChangedDebounceMs }),
      }),
    );
  }
  const cache = new ResourceCache({ log, ...(opts.cache ?? {}) });
  for (const c of conns) cache.watch(c);
  const catalog = new McpToolCatalog(conns);
  const listeners = new Set<(c: McpStateChange) => void>();
  for (const c of conns) {
    c.onStateChange((change) => {
      for (const fn of listeners) fn(change);
    });
  }
  const sessionView = (): McpToolSource => new McpToolSource({ catalog, cache, log });

  return {
    cache,
    async start() {
      const started = performance.now();
      await Promise.all(conns.map((c) => c.start()));
      const ready = conns.filter((c) => c.state === 'ready').length;
      log.info({ servers: conns.length, ready, ms: Math.round(performance.now() - started) }, 'mcp servers started');
    },
    sessionView,
    async contextFor(o) {
      return (await buildResourceContext(conns, cache, log, o)).map(formatContextBlock);
    },
    status() {
      return conns.map((c) => {
        const s: McpServerStatus = { name: c.name, state: c.state, tools: c.state === 'ready' ? c.tools().length : 0 };
        if (c.transportKind) s.transport = c.transportKind;
        if (c.pid !== undefined) s.pid = c.pid;
        if (c.lastError !== undefined) s.lastError = c.lastError;
        return s;
      });
    },
    stats() {
      return Object.fromEntries(conns.map((c) => [c.name, { ...c.stats }]));
    },
    onStateChange(fn) {
      listeners.add(fn);
      return () => listeners.delete(fn);
    },
    async close() {
      await Promise.all(conns.map((c) => c.close()));
      cache.clear();
      log.info({ servers: conns.length }, 'mcp servers closed');
    },
  };
}
