/**
 * @module What the parts of one app's metrics share: the sources they read at scrape time (bound
 * late, as the app and its deps are built), the reasons a device upgrade is refused, and seconds,
 * the unit every duration is exposed in.
 */
import type { MediaEngineStats } from '../../audio/media/media.ts';
import type { McpManager } from '../../mcp/manager.ts';

/** The parts of the MCP manager metrics read. */
export type McpMetricsSource = Pick<McpManager, 'status' | 'stats' | 'onStateChange'>;

export interface MetricsSources {
  /** Sessions open now (the app's SessionRegistry size). */
  activeSessions?: () => number;
  mcp?: McpMetricsSource;
  /** The windowed event-loop delay admission control judges, in ms (AdmissionControl.eventLoopDelayMs). */
  admissionEventLoopDelayMs?: () => number;
  /** The media worker pool (workers alive, queued requests, restarts). */
  media?: () => MediaEngineStats;
  /** Times the provider thread (LLM client, OpenAI ASR) died and was replaced. */
  providerThreadRestarts?: () => number;
  /** The MQTT transport: devices connected to the broker, audio sessions open. */
  mqtt?: () => { devices: number; audioSessions: number };
}

/**
 * Why a device's connection was refused, on any transport: the values of the `reason` label. The transport
 * that refuses says why; the assembly hands its reasons to `connectionRefused`, so a reason this
 * list lacks fails the type check there.
 */
export type RefusalReason = 'unauthorized' | 'capacity' | 'draining' | 'overloaded' | 'per_ip';

export const seconds = (ms: number): number => Math.max(0, ms) / 1000;
