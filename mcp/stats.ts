/**
 * @module Per-server counters for observability: logged now, exported as metrics later by the
 * operations work (which reads `McpManager.stats()`).
 */

export type McpServerState = 'connecting' | 'ready' | 'failed' | 'closed';

export interface McpServerStats {
  calls: number;
  errors: number;
  timeouts: number;
  /** Sum of call latencies in ms; divide by `latencyCount` for the mean. */
  latencyMsSum: number;
  latencyCount: number;
  cacheHits: number;
  cacheMisses: number;
  /** Successful connects after the first one. */
  reconnects: number;
}

export function emptyStats(): McpServerStats {
  return {
    calls: 0,
    errors: 0,
    timeouts: 0,
    latencyMsSum: 0,
    latencyCount: 0,
    cacheHits: 0,
    cacheMisses: 0,
    reconnects: 0,
  };
}

export interface McpStateChange {
  server: string;
  state: McpServerState;
  previous: McpServerState;
  error?: string;
}
