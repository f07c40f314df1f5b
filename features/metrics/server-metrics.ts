/**
 * @module Prometheus metrics for one app: its own prom-client Registry (never the global default,
 * so tests can build several apps in one process), made of four parts registered in this order:
 * Node's default metrics (with event-loop lag), the server's load (`load-metrics.ts`: sessions,
 * refusals, MQTT, admission, media workers, provider thread), voice turns (`turn-metrics.ts`, fed
 * by the TurnObserver), MCP connections (`mcp-metrics.ts`), and the child processes running.
 * Sources that exist only once the app or deps are built are bound late (`bind`).
 */
import { collectDefaultMetrics, Registry } from 'prom-client';
import type { ConversationFactory } from '../../voice/session/conversation.ts';
import type { TurnObserver, TurnTimings } from '../../voice/conversation/voice-deps.ts';
import type { ChildProcessScanOptions } from './child-processes.ts';
import { childProcessGauge, loadMetrics } from './load-metrics.ts';
import { mcpMetrics } from './mcp-metrics.ts';
import type { MetricsSources, RefusalReason } from './sources.ts';
import { turnMetrics } from './turn-metrics.ts';

export interface ServerMetricsOptions extends MetricsSources {
  /** Node/process default metrics, including `nodejs_eventloop_lag_seconds`. Default true. */
  defaultMetrics?: boolean;
  /** Where and for whom to count child processes; false turns the gauge off. */
  childProcesses?: ChildProcessScanOptions | false;
  /** Names of configured MCP servers: the only values the tool `server` label may take besides local/device. */
  mcpServerNames?: readonly string[];
}

export interface ServerMetrics {
  readonly registry: Registry;
  /** Pass to `createDeps(config, log, { observer })`: every finished turn lands in the metrics. */
  readonly observer: TurnObserver;
  /** Wraps the factory so each created conversation (one per session, after hello) counts as a session. */
  countSessions(factory: ConversationFactory): ConversationFactory;
  /** Late binding for sources that exist only after the app or deps are built. */
  bind(sources: MetricsSources): void;
  /** Records one turn (what the observer does). */
  observeTurn(t: TurnTimings): void;
  /** Counts a device connection refused, on any transport (the session door's `onRefused`). */
  connectionRefused(reason: RefusalReason): void;
  /** Counts an audio datagram the MQTT transport dropped. */
  udpDropped(reason: string): void;
  /** The exposition text and its content type, for `/metrics`. */
  render(): Promise<{ contentType: string; body: string }>;
  /** Unsubscribes from MCP state changes and clears the registry. */
  close(): void;
}

/** Creates the metrics of one app. */
export function createServerMetrics(opts: ServerMetricsOptions = {}): ServerMetrics {
  const registry = new Registry();
  const registers = [registry];
  let sources: MetricsSources = {
    ...(opts.activeSessions ? { activeSessions: opts.activeSessions } : {}),
    ...(opts.mcp ? { mcp: opts.mcp } : {}),
    ...(opts.admissionEventLoopDelayMs ? { admissionEventLoopDelayMs: opts.admissionEventLoopDelayMs } : {}),
    ...(opts.media ? { media: opts.media } : {}),
  };
  if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: registry });
  const load = loadMetrics(registers, () => sources);
  const turns = turnMetrics(registers, new Set(opts.mcpServerNames ?? []));
  const mcp = mcpMetrics(registers, () => sources.mcp);
  if (opts.childProcesses !== false) childProcessGauge(registers, opts.childProcesses || {});
  mcp.follow(sources.mcp);

  return {
    registry,
    observer: turns,
    observeTurn: turns.onTurn,
    connectionRefused: load.connectionRefused,
    udpDropped: load.udpDropped,
    countSessions(factory) {
      return (ctx) => {
        const conversation = factory(ctx);
        load.sessionStarted();
        return conversation;
      };
    },
    bind(next) {
      if (next.mcp && next.mcp !== sources.mcp) mcp.follow(next.mcp);
      sources = { ...sources, ...next };
    },
    async render() {
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
    close() {
      mcp.close();
      registry.clear();
    },
  };
}
