/**
 * @module The MCP servers' connections: each one's state and tool count (read when scraped), the
 * state changes (counted as the manager reports them), and the counters whose truth lives in the
 * manager's stats (cache hits and misses, reconnects, call timeouts), copied when scraped.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { McpServerState } from '../../mcp/stats.ts';
import type { McpMetricsSource } from './sources.ts';

const MCP_STATES: readonly McpServerState[] = ['connecting', 'ready', 'failed', 'closed'];

export interface McpMetrics {
  /** Follows this manager's state changes from now on (and stops following the one before). */
  follow(mcp: McpMetricsSource | undefined): void;
  /** Stops following state changes. */
  close(): void;
}

/** Registers the MCP metrics; `source` is read at each scrape (it changes when bound). */
export function mcpMetrics(registers: Registry[], source: () => McpMetricsSource | undefined): McpMetrics {
  new Gauge({
    name: 'xiaozhi_mcp_server_state',
    help: 'MCP connection state per server: 1 for the current state, 0 for the others.',
    labelNames: ['server', 'state'] as const,
    registers,
    collect() {
      this.reset();
      for (const s of source()?.status() ?? []) {
        for (const state of MCP_STATES) this.set({ server: s.name, state }, s.state === state ? 1 : 0);
      }
    },
  });
  new Gauge({
    name: 'xiaozhi_mcp_server_tools',
    help: 'Tools each MCP server exposes now (after filters).',
    labelNames: ['server'] as const,
    registers,
    collect() {
      this.reset();
      for (const s of source()?.status() ?? []) this.set({ server: s.name }, s.tools);
    },
  });
  const stateChanges = new Counter({
    name: 'xiaozhi_mcp_state_changes_total',
    help: 'MCP connection state transitions per server, by the state entered.',
    labelNames: ['server', 'state'] as const,
    registers,
  });
  /** Counters whose truth lives in McpManager.stats(): copied at scrape time. */
  const fromMcpStats = (
    name: string,
    help: string,
    pick: (s: ReturnType<McpMetricsSource['stats']>[string]) => number,
  ): void => {
    new Counter({
      name,
      help,
      labelNames: ['server'] as const,
      registers,
      collect() {
        this.reset();
        for (const [server, st] of Object.entries(source()?.stats() ?? {})) this.inc({ server }, pick(st));
      },
    });
  };
  fromMcpStats('xiaozhi_resource_cache_hits_total', 'MCP resource reads answered from the cache.', (s) => s.cacheHits);
  fromMcpStats(
    'xiaozhi_resource_cache_misses_total',
    'MCP resource reads that went to the server.',
    (s) => s.cacheMisses,
  );
  fromMcpStats(
    'xiaozhi_mcp_reconnects_total',
    'Successful MCP reconnects after the first connect.',
    (s) => s.reconnects,
  );
  fromMcpStats('xiaozhi_mcp_call_timeouts_total', 'MCP tool calls that timed out.', (s) => s.timeouts);

  let unsubscribe: (() => void) | undefined;
  return {
    follow(mcp) {
      unsubscribe?.();
      unsubscribe = mcp?.onStateChange((c) => stateChanges.inc({ server: c.server, state: c.state }));
    },
    close() {
      unsubscribe?.();
      unsubscribe = undefined;
    },
  };
}
