/**
 * @module How loaded the server is: device sessions (open now, started), upgrades refused, the
 * MQTT broker's devices and the datagrams it dropped, admission control's event-loop delay, the
 * media workers, the provider thread, and the child processes running. Gauges read their source
 * when scraped; counters count what the transports and the session wrapper report.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import { countChildProcesses, type ChildProcessScanOptions } from './child-processes.ts';
import { seconds, type MetricsSources, type RefusalReason } from './sources.ts';

export interface LoadCounters {
  sessionStarted(): void;
  connectionRefused(reason: RefusalReason): void;
  udpDropped(reason: string): void;
}

/** Registers the load metrics; `sources` is read at each scrape (it changes as sources are bound). */
export function loadMetrics(registers: Registry[], sources: () => MetricsSources): LoadCounters {
  new Gauge({
    name: 'xiaozhi_sessions_active',
    help: 'Device sessions (WebSocket connections) open now.',
    registers,
    collect() {
      this.set(sources().activeSessions?.() ?? 0);
    },
  });
  const sessionsTotal = new Counter({
    name: 'xiaozhi_sessions_total',
    help: 'Device sessions started (after hello).',
    registers,
  });
  const refused = new Counter({
    name: 'xiaozhi_connections_refused_total',
    help: 'Device connections refused (WebSocket upgrades; MQTT CONNECTs and hellos): unauthorized (401), capacity (503, server.maxSessions), draining (503, shutting down), overloaded (503, server.admission), per_ip (429, server.maxSessionsPerIp or server.upgradeRate).',
    labelNames: ['reason'],
    registers,
  });
  new Gauge({
    name: 'xiaozhi_mqtt_devices',
    help: 'Devices connected to the embedded MQTT broker (idle or in an audio session).',
    registers,
    collect() {
      this.set(sources().mqtt?.().devices ?? 0);
    },
  });
  const udpDrops = new Counter({
    name: 'xiaozhi_udp_datagrams_dropped_total',
    help: "Audio datagrams dropped by the MQTT transport: size (too large), short, type, length (not the header's), unknown_ssrc, replay (sequence not newer, or too far ahead), implausible (not an Opus frame of the announced duration after decryption), unconfirmed (from a new address not yet confirmed as the device's).",
    labelNames: ['reason'],
    registers,
  });
  new Gauge({
    name: 'xiaozhi_admission_event_loop_delay_seconds',
    help: 'Event-loop delay admission control judges: the lower p99 of the last two ~1 s windows; above server.admission.maxEventLoopDelayMs new devices are refused.',
    registers,
    collect() {
      this.set(seconds(sources().admissionEventLoopDelayMs?.() ?? 0));
    },
  });
  new Gauge({
    name: 'xiaozhi_media_workers',
    help: 'Media worker threads running (Opus, VAD, embedded TTS); 0 when media runs on the main thread.',
    registers,
    collect() {
      this.set(sources().media?.().workers ?? 0);
    },
  });
  new Gauge({
    name: 'xiaozhi_media_queue_depth',
    help: 'Requests sent to media workers and not answered yet (all workers); a growing value means the workers are saturated.',
    registers,
    collect() {
      this.set(sources().media?.().queueDepth ?? 0);
    },
  });
  new Gauge({
    name: 'xiaozhi_media_worker_restarts',
    help: 'Media workers that died and were replaced since start (their sessions were closed with 4006).',
    registers,
    collect() {
      this.set(sources().media?.().workerRestarts ?? 0);
    },
  });
  new Gauge({
    name: 'xiaozhi_provider_thread_restarts',
    help: 'Times the provider thread (LLM client and OpenAI-compatible ASR) died and was replaced since start (the turns in flight apologised).',
    registers,
    collect() {
      this.set(sources().providerThreadRestarts?.() ?? 0);
    },
  });
  return {
    sessionStarted: () => sessionsTotal.inc(),
    connectionRefused: (reason) => refused.inc({ reason }),
    udpDropped: (reason) => udpDrops.inc({ reason }),
  };
}

/** The running descendant processes by program, counted at each scrape. */
export function childProcessGauge(registers: Registry[], scan: ChildProcessScanOptions): void {
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
