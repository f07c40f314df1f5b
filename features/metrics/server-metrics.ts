/**
 * @module Prometheus metrics for one app: its own prom-client Registry (never the global default,
 * so tests can build several apps in one process). Fed by the TurnObserver (turn timings), a
 * wrapper around the ConversationFactory (sessions), and read-at-scrape sources (active sessions,
 * MCP status and stats, child processes, Node's default metrics with event-loop lag).
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { MediaEngineStats } from '../../audio/media/media.ts';
import type { McpManager } from '../../mcp/manager.ts';
import type { McpServerState } from '../../mcp/stats.ts';
import type { ConversationFactory } from '../../voice/session/conversation.ts';
import type { TurnObserver, TurnTimings } from '../../voice/conversation/voice-deps.ts';
import { countChildProcesses, type ChildProcessScanOptions } from './child-processes.ts';
import { toolServer } from './tool-server.ts';

/** Stage latencies of a voice turn, in seconds: 50 ms (fast local steps) to 10 s (slow cloud). */
export const STAGE_BUCKETS_S = [0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 7.5, 10] as const;
/** Whole turns include speaking the answer, so they run longer. */
export const TURN_BUCKETS_S = [0.5, 1, 2, 3, 5, 7.5, 10, 15, 20, 30, 60, 120] as const;

const MCP_STATES: readonly McpServerState[] = ['connecting', 'ready', 'failed', 'closed'];

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
  /** Counts a device connection refused before the upgrade (pass to `buildApp({ onRefused })`). */
  connectionRefused(reason: RefusalReason): void;
  /** Counts an audio datagram the MQTT transport dropped. */
  udpDropped(reason: string): void;
  /** The exposition text and its content type, for `/metrics`. */
  render(): Promise<{ contentType: string; body: string }>;
  /** Unsubscribes from MCP state changes and clears the registry. */
  close(): void;
}

const seconds = (ms: number): number => Math.max(0, ms) / 1000;

/**
 * Why a device's WebSocket upgrade was refused: the values of the `reason` label. The transport
 * that refuses says why; the assembly hands its reasons to `connectionRefused`, so a reason this
 * list lacks fails the type check there.
 */
export type RefusalReason = 'unauthorized' | 'capacity' | 'draining' | 'overloaded' | 'per_ip';

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
  const mcpNames = new Set(opts.mcpServerNames ?? []);
  let unsubscribe: (() => void) | undefined;

  if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: registry });

  new Gauge({
    name: 'xiaozhi_sessions_active',
    help: 'Device sessions (WebSocket connections) open now.',
    registers,
    collect() {
      this.set(sources.activeSessions?.() ?? 0);
    },
  });
  const sessionsTotal = new Counter({ name: 'xiaozhi_sessions_total', help: 'Device sessions started (after hello).', registers });
  const refused = new Counter({
    name: 'xiaozhi_connections_refused_total',
    help: 'Device WebSocket upgrades refused: unauthorized (401), capacity (503, server.maxSessions), draining (503, shutting down), overloaded (503, server.admission), per_ip (429, server.maxSessionsPerIp or server.upgradeRate).',
    labelNames: ['reason'],
    registers,
  });
  new Gauge({
    name: 'xiaozhi_mqtt_devices',
    help: 'Devices connected to the embedded MQTT broker (idle or in an audio session).',
    registers,
    collect() {
      this.set(sources.mqtt?.().devices ?? 0);
    },
  });
  const udpDrops = new Counter({
    name: 'xiaozhi_udp_datagrams_dropped_total',
    help: 'Audio datagrams dropped by the MQTT transport: size (too large), short, type, length (not the header\'s), unknown_ssrc, replay (sequence not newer, or too far ahead), implausible (not an Opus frame of the announced duration after decryption), unconfirmed (from a new address not yet confirmed as the device\'s).',
    labelNames: ['reason'],
    registers,
  });
  new Gauge({
    name: 'xiaozhi_admission_event_loop_delay_seconds',
    help: 'Event-loop delay admission control judges: the lower p99 of the last two ~1 s windows; above server.admission.maxEventLoopDelayMs new devices are refused.',
    registers,
    collect() {
      this.set(seconds(sources.admissionEventLoopDelayMs?.() ?? 0));
    },
  });
  new Gauge({
    name: 'xiaozhi_media_workers',
    help: 'Media worker threads running (Opus, VAD, embedded TTS); 0 when media runs on the main thread.',
    registers,
    collect() {
      this.set(sources.media?.().workers ?? 0);
    },
  });
  new Gauge({
    name: 'xiaozhi_media_queue_depth',
    help: 'Requests sent to media workers and not answered yet (all workers); a growing value means the workers are saturated.',
    registers,
    collect() {
      this.set(sources.media?.().queueDepth ?? 0);
    },
  });
  new Gauge({
    name: 'xiaozhi_media_worker_restarts',
    help: 'Media workers that died and were replaced since start (their sessions were closed with 4006).',
    registers,
    collect() {
      this.set(sources.media?.().workerRestarts ?? 0);
    },
  });
  new Gauge({
    name: 'xiaozhi_provider_thread_restarts',
    help: 'Times the provider thread (LLM client and OpenAI-compatible ASR) died and was replaced since start (the turns in flight apologised).',
    registers,
    collect() {
      this.set(sources.providerThreadRestarts?.() ?? 0);
    },
  });
  const turns = new Counter({
    name: 'xiaozhi_turns_total',
    help: 'Conversation turns by how they started (voice, text, wake_word, or notice: a message of the server\'s own) and how they ended.',
    labelNames: ['source', 'outcome'] as const,
    registers,
  });
  const turnsRefused = new Counter({
    name: 'xiaozhi_turns_refused_total',
    help: 'Turns a device asked for (typed text, wake word, speech) and did not get: its session had started conversation.maxTurnsPerMinute turns in the last minute.',
    registers,
  });
  const stage = (name: string, help: string): Histogram => new Histogram({ name, help, buckets: [...STAGE_BUCKETS_S], registers });
  const asr = stage('xiaozhi_asr_duration_seconds', 'Speech recognition: end of speech to recognised text.');
  const llmFirst = stage('xiaozhi_llm_first_token_seconds', 'LLM request to its first streamed token.');
  const firstSentence = stage('xiaozhi_first_sentence_seconds', 'End of speech (server decision) to the answer\'s first sentence, ready to be spoken.');
  const firstAudio = stage('xiaozhi_first_audio_seconds', 'End of speech (server decision) to the first audio frame sent to the device.');
  const turnTotal = new Histogram({
    name: 'xiaozhi_turn_duration_seconds',
    help: 'Whole turns, from their start to the last frame or their end.',
    buckets: [...TURN_BUCKETS_S],
    registers,
  });
  const earlyStarts = new Counter({
    name: 'xiaozhi_early_starts_total',
    help: 'Turns started at a pause before the end of speech was confirmed (vad.earlyStartMs): used, or dropped because the user spoke on (their ASR and LLM requests, and the first sentence of a remote TTS, were wasted).',
    labelNames: ['result'] as const,
    registers,
  });
  const lateFrames = new Counter({
    name: 'xiaozhi_late_frames_total',
    help: 'Downlink audio frames sent after their play-out time (the device may have stuttered).',
    registers,
  });
  const frameIntervals = new Counter({
    name: 'xiaozhi_downlink_intervals_total',
    help: 'Intervals between two downlink audio frames sent within a turn.',
    registers,
  });
  const lateIntervals = new Counter({
    name: 'xiaozhi_downlink_late_intervals_total',
    help: 'Of those, intervals over 65 ms (60 ms frames): the late-frame rate the Java xiaozhi server publishes, as sent by this server.',
    registers,
  });
  const toolCalls = new Counter({
    name: 'xiaozhi_tool_calls_total',
    help: 'Tool calls by source server (MCP server name, local, device) and outcome.',
    labelNames: ['server', 'outcome'] as const,
    registers,
  });
  const toolDuration = new Histogram({
    name: 'xiaozhi_tool_call_duration_seconds',
    help: 'Tool call latency by source server.',
    labelNames: ['server'] as const,
    buckets: [...STAGE_BUCKETS_S],
    registers,
  });

  new Gauge({
    name: 'xiaozhi_mcp_server_state',
    help: 'MCP connection state per server: 1 for the current state, 0 for the others.',
    labelNames: ['server', 'state'] as const,
    registers,
    collect() {
      this.reset();
      for (const s of sources.mcp?.status() ?? []) {
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
      for (const s of sources.mcp?.status() ?? []) this.set({ server: s.name }, s.tools);
    },
  });
  const stateChanges = new Counter({
    name: 'xiaozhi_mcp_state_changes_total',
    help: 'MCP connection state transitions per server, by the state entered.',
    labelNames: ['server', 'state'] as const,
    registers,
  });
  /** Counters whose truth lives in McpManager.stats(): copied at scrape time. */
  const fromMcpStats = (name: string, help: string, pick: (s: ReturnType<McpMetricsSource['stats']>[string]) => number): void => {
    new Counter({
      name,
      help,
      labelNames: ['server'] as const,
      registers,
      collect() {
        this.reset();
        for (const [server, st] of Object.entries(sources.mcp?.stats() ?? {})) this.inc({ server }, pick(st));
      },
    });
  };
  fromMcpStats('xiaozhi_resource_cache_hits_total', 'MCP resource reads answered from the cache.', (s) => s.cacheHits);
  fromMcpStats('xiaozhi_resource_cache_misses_total', 'MCP resource reads that went to the server.', (s) => s.cacheMisses);
  fromMcpStats('xiaozhi_mcp_reconnects_total', 'Successful MCP reconnects after the first connect.', (s) => s.reconnects);
  fromMcpStats('xiaozhi_mcp_call_timeouts_total', 'MCP tool calls that timed out.', (s) => s.timeouts);

  if (opts.childProcesses !== false) {
    const scan = opts.childProcesses || {};
    new Gauge({
      name: 'xiaozhi_child_processes',
      help: 'Running descendant processes of the server by program (ffmpeg, pocketsphinx, MCP servers).',
      labelNames: ['program'] as const,
      registers,
      async collect() {
        const counts = await countChildProcesses(scan);
        this.reset();
        for (const [program, n] of counts) this.set({ program }, n);
      },
    });
  }

  const bindMcp = (mcp: McpMetricsSource | undefined): void => {
    unsubscribe?.();
    unsubscribe = mcp?.onStateChange((c) => stateChanges.inc({ server: c.server, state: c.state }));
  };
  bindMcp(sources.mcp);

  const observeTurn = (t: TurnTimings): void => {
    turns.inc({ source: t.source, outcome: t.outcome });
    if (t.asrMs !== undefined) asr.observe(seconds(t.asrMs));
    if (t.llmFirstTokenMs !== undefined) llmFirst.observe(seconds(t.llmFirstTokenMs));
    if (t.firstSentenceMs !== undefined) firstSentence.observe(seconds(t.firstSentenceMs));
    if (t.firstAudioMs !== undefined) firstAudio.observe(seconds(t.firstAudioMs));
    turnTotal.observe(seconds(t.totalMs));
    if (t.lateFrames > 0) lateFrames.inc(t.lateFrames);
    if (t.frameIntervals > 0) frameIntervals.inc(t.frameIntervals);
    if (t.lateIntervals > 0) lateIntervals.inc(t.lateIntervals);
    for (const call of t.tools) {
      const server = toolServer(call.name, mcpNames);
      toolCalls.inc({ server, outcome: call.isError ? 'error' : 'ok' });
      toolDuration.observe({ server }, seconds(call.ms));
    }
  };

  return {
    registry,
    observer: { onTurn: observeTurn, onEarlyStart: (result) => earlyStarts.inc({ result }), onTurnRefused: () => turnsRefused.inc() },
    observeTurn,
    connectionRefused: (reason) => refused.inc({ reason }),
    udpDropped: (reason) => udpDrops.inc({ reason }),
    countSessions(factory) {
      return (ctx) => {
        const conversation = factory(ctx);
        sessionsTotal.inc();
        return conversation;
      };
    },
    bind(next) {
      if (next.mcp && next.mcp !== sources.mcp) bindMcp(next.mcp);
      sources = { ...sources, ...next };
    },
    async render() {
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
    close() {
      unsubscribe?.();
      unsubscribe = undefined;
      registry.clear();
    },
  };
}
