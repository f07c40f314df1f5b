/**
 * Result shapes of the fleet simulator and their printed forms: one aligned row per step while the
 * run goes on, and a Markdown table of all steps at the end.
 */
import type { TurnRecord } from './device.ts';
import type { FakeStats } from './lean-fakes.ts';
import type { ServerTurnTiming } from './server.ts';
import type { P50P95 } from './stats.ts';
import type { ProfileName, ProviderLatency } from './provider-profiles.ts';
import { STAGES, type VoiceToVoice } from './voice-to-voice.ts';
import { LATE_TICK_MS, type CpuWait, type RigCpuShare, type ServerCpuShare, type TimerJitter } from './cpu-window.ts';

export interface StepResult {
  devices: number;
  connected: number;
  /** WebSocket upgrades refused with 503 (capacity or load) while connecting; each was retried. */
  connectRefusals: number;
  turnsExpected: number;
  turnsDone: number;
  bargeIns: number;
  /** Device view: last speech packet sent → first downlink frame, done turns (barge-in turns included). */
  eosToFirstFrameMs: P50P95;
  /** Device view: last speech packet sent → `stt`. */
  eosToSttMs: P50P95;
  /** abort sent → `tts stop` (barge-in turns). */
  abortToStopMs: P50P95;
  /**
   * What the user feels: the end of their voice → the first answer frame, done turns, with the
   * stages inside it from the server's log (self-started server; the device figure always).
   */
  voiceToVoice: VoiceToVoice;
  /** What the fakes did over the step (uploads, chats, speech requests; self-started server only). */
  fakeWork: FakeStats | null;
  /** Server log (`turn timings`), null when the server is not ours: VAD decision → first frame sent. */
  serverFirstAudioMs: P50P95 | null;
  serverAsrMs: P50P95 | null;
  serverLlmFirstTokenMs: P50P95 | null;
  /** The server log's firstSentenceMs: end of speech → the answer's first sentence cut. */
  serverFirstSentenceMs: P50P95 | null;
  /**
   * Stages from the server's end-of-speech decision, for each device's first turn of the step
   * (all devices at once: the burst) and its later turns (spread by the answers before them).
   */
  serverStages: { first: TurnStages; later: TurnStages } | null;
  /** The server's turn-timings lines of the step's devices (JSON only). */
  serverTurns: ServerTurnTiming[] | null;
  /** Server-side outcome counts (answered, aborted, ...) from its log. */
  serverOutcomes: Record<string, number> | null;
  /**
   * The burst of the step's first turns, from the server's first end-of-speech decision to the time
   * it had sent 95 % of their first frames: how busy all CPUs were, and the share of them the
   * server and its helpers used. Null off Linux or when the server was not started here.
   */
  burstCpu: BurstCpu | null;
  /** CPU use while all devices sent the speech of their first turn. */
  talkingCpu: BurstCpu | null;
  /** Frames the server's pacer sent after their play-out time (its log). */
  serverLateFrames: number | null;
  /** Late intervals as the server sent them (its pacer, from its log), in %: the rest of `latePct` arose on the way or in the simulator. */
  serverLatePct: number | null;
  frames: number;
  intervals: number;
  lateIntervals: number;
  latePct: number;
  gaps: number;
  gapPct: number;
  underrunMs: number;
  /** Δ CPU seconds / Δ wall seconds of the server process over the step's turns. */
  serverCpuCores: number | null;
  /** The same for its exited children (espeak-ng, ...), when known. */
  serverChildCpuCores: number | null;
  serverPeakRssMb: number | null;
  serverHwmMb: number | null;
  /** prom-client event-loop lag over the step, ms beyond its 10 ms sampling tick. */
  serverLoopP99Ms: number | null;
  serverLoopMaxMs: number | null;
  /** The simulator's own event-loop delay over the step, ms beyond the 10 ms sampling tick. */
  simLoopP99Ms: number;
  simLoopMaxMs: number;
  /** CPU the simulator itself used over the step, in cores. */
  simCpuCores: number;
  /** The machine's 1-minute load average at the end of the step, and its CPU count. */
  loadAvg1: number;
  /** Share of all CPUs' time over the step that the hypervisor gave to other guests, %; null off Linux. */
  stealPct: number | null;
  /** The simulator's nearly idle probe thread's timer over the step (see sim/cpu-window.ts); null off Linux. */
  timerJitter: TimerJitter | null;
  cpus: number;
  wallMs: number;
  errors: Record<string, number>;
  turns: TurnRecord[];
}

export interface IdleResult {
  devices: number;
  /** websocket: each idle device holds a session (hello); mqtt: a broker connection only. */
  transport: 'websocket' | 'mqtt';
  connected: number;
  connectRefusals: number;
  connectMs: number;
  sessionsActive: number | null;
  rssBeforeMb: number | null;
  rssIdleMb: number | null;
  rssPerDeviceKb: number | null;
  rssAfterDisconnectMb: number | null;
  /** RSS with the first half of the devices connected (`ceil(devices / 2)`). */
  rssHalfMb: number | null;
  /** (RSS with all − RSS with the first half) / devices of the second half: one more device's cost. */
  rssSecondHalfPerDeviceKb: number | null;
  memoryHalf: HeapFigures | null;
  /** The server's Node.js version, from its /metrics. */
  serverNode: string | null;
  /** The server's V8 heap and external memory with 0 devices and with the idle ones, from its /metrics. */
  memoryBefore: HeapFigures | null;
  memoryIdle: HeapFigures | null;
  errors: Record<string, number>;
}

/** `process.memoryUsage()`'s parts as the server's /metrics has them (prom-client), MB. */
export interface HeapFigures {
  heapUsedMb: number;
  heapTotalMb: number;
  externalMb: number;
  /** V8's young generation (both semi-spaces) as reserved. */
  newSpaceMb: number | null;
}

export interface SimulationResult {
  transport: 'websocket' | 'mqtt';
  /** The fakes' latency profile and the effective figures (null: a server given by --url). */
  profile: ProfileName | null;
  providers: ProviderLatency | null;
  startedServer: boolean;
  serverPid: number | null;
  wsUrl: string;
  vadSilenceMs: number | null;
  turnsPerDevice: number;
  bargeIn: boolean;
  steps: StepResult[];
  idle: IdleResult | null;
  warnings: string[];
  serverErrors: string[];
  wallMs: number;
}

const int = (v: number | null | undefined): string =>
  v === null || v === undefined || !Number.isFinite(v) ? 'n/a' : String(Math.round(v));
const pair = (p: P50P95 | null): string => (p === null || p.n === 0 ? 'n/a' : `${int(p.p50)} / ${int(p.p95)}`);
const pct = (v: number): string => (Number.isFinite(v) ? v.toFixed(1) : 'n/a');

export interface BurstCpu {
  windowMs: number;
  machineBusyPct: number;
  /** Of machineBusyPct, what the hypervisor gave to other guests (see sim/cpu-window.ts). */
  stealPct: number;
  /** Shares of all CPUs' time, by thread group of the server (see sim/cpu-window.ts). */
  server: ServerCpuShare;
  /** Shares of the simulator's and the fakes' processes: the rest of a busy machine. */
  rig: RigCpuShare;
  /** How long the server's main thread and the simulator's waited for a CPU in the window, ms. */
  cpuWaitMs: CpuWait;
  /** The probe thread's timer in the window. */
  timer: TimerJitter | null;
  cpus: number;
}

/** ` (the hypervisor took N %)` when a virtual machine lost at least 1 % of its CPUs' time to other guests. */
function stolen(share: number | null): string {
  return share !== null && share >= 1 ? ` (the hypervisor took ${int(share)} %)` : '';
}

/**
 * Above this share of the CPUs' time taken by the hypervisor over a step, the run warns. On the
 * 2-core development VM, 50-device steps with 0.2 % steal or less had 0.07–0.62 % late frames at
 * the device, those with 2–6 % 0.3–2.7 % and those with 7–19 % 1.5–5.3 %: the host's other guests
 * then weigh as much as the server.
 */
export const NOISY_HOST_STEAL_PCT = 2;

/** The warning for a step whose host took NOISY_HOST_STEAL_PCT or more; null otherwise. */
export function stealWarning(step: number, stealPct: number | null): string | null {
  if (stealPct === null || stealPct < NOISY_HOST_STEAL_PCT) return null;
  return `step ${step}: the hypervisor took ${stealPct.toFixed(1)} % of the CPUs' time; compare its timing figures only with runs on an equally busy host`;
}

/** The sim line: what the simulated devices cost, and what else loaded the machine over the step. */
export function simLine(s: StepResult): string {
  const steal = s.stealPct === null ? '' : `; the hypervisor took ${pct(s.stealPct)} % of the CPUs' time`;
  const t = s.timerJitter;
  const timer = t
    ? `; a nearly idle thread's timer fired over ${LATE_TICK_MS} ms late in ${pct((100 * t.late) / t.ticks)} % of its ticks (max ${int(t.maxLateMs)} ms)`
    : '';
  return `  sim: ${s.simCpuCores.toFixed(2)} CPU cores; machine load average ${s.loadAvg1.toFixed(1)} on ${s.cpus} CPUs${steal}${timer}; step took ${(s.wallMs / 1000).toFixed(1)} s`;
}

/** A CPU line under a step's row: how busy the machine was in a window, and the server's share by thread. */
function cpuLine(label: string, window: string, b: BurstCpu): string {
  const v = b.server;
  const parts = `main ${int(v.main)}, providers ${int(v.providers)}, media ${int(v.media)}, other threads ${int(v.other)}, helpers ${int(v.helpers)}`;
  const rig = `the simulator ${int(b.rig.simulator)} %${b.rig.fakes === null ? '' : `, the fakes ${int(b.rig.fakes)} %`}`;
  const w = b.cpuWaitMs;
  const waits = [
    w.serverMain === null ? null : `the server's main thread ${int(w.serverMain)} ms`,
    w.simulator === null ? null : `the simulator's ${int(w.simulator)} ms`,
  ].filter((x) => x !== null);
  const waited = waits.length ? `; waited for a CPU: ${waits.join(', ')}` : '';
  const timer = b.timer
    ? `; an idle thread's timer over ${LATE_TICK_MS} ms late ${b.timer.late} of ${b.timer.ticks} times`
    : '';
  return `  ${label}: ${window}; all ${b.cpus} CPUs ${int(b.machineBusyPct)} % busy${stolen(b.stealPct)}, the server ${int(v.total)} % (${parts}), ${rig}${waited}${timer}`;
}

/** The burst line: was the machine saturated while the devices waited for their answers? */
export function burstLine(s: StepResult): string | null {
  const b = s.burstCpu;
  return (
    b &&
    cpuLine('burst (first turns)', `${int(b.windowMs)} ms from the first turn's start to 95 % of first frames sent`, b)
  );
}

/** The talking line: what the devices cost while all of them sent speech. */
export function talkingLine(s: StepResult): string | null {
  const b = s.talkingCpu;
  return (
    b &&
    cpuLine(
      'talking (first turns)',
      `${int(b.windowMs)} ms while ${s.connected === 1 ? 'the device' : `all ${s.connected} devices`} sent speech`,
      b,
    )
  );
}

/** p50/p95 ms from the server's end-of-speech decision to: the transcript, the first sentence cut, the first frame sent. */
export interface TurnStages {
  turns: number;
  asr: P50P95;
  firstSentence: P50P95;
  firstFrame: P50P95;
}

/** The per-stage line printed under a step's row (self-started server only). */
export function stagesLine(s: StepResult): string | null {
  const st = s.serverStages;
  if (!st) return null;
  const one = (t: TurnStages): string =>
    `ASR ${pair(t.asr)} → 1st sentence ${pair(t.firstSentence)} → 1st frame ${pair(t.firstFrame)}`;
  return `  stages (server, ms p50 / p95 from its end-of-speech decision): first turns ${one(st.first)}; later turns ${one(st.later)}`;
}

export const COLUMNS = [
  'devices',
  'turns done',
  'EoS→1st frame p50/p95 (device)',
  'server-added p50/p95',
  'ASR p50/p95',
  'LLM 1st token p50/p95',
  'late %',
  'sent late %',
  'gap %',
  'underrun ms',
  'server CPU cores',
  'server peak RSS MB',
  'server loop p99/max',
  'sim loop p99/max',
] as const;

export function stepCells(s: StepResult): string[] {
  const cpu =
    s.serverCpuCores === null
      ? 'n/a'
      : `${s.serverCpuCores.toFixed(2)}${s.serverChildCpuCores !== null ? ` (+${s.serverChildCpuCores.toFixed(2)})` : ''}`;
  const loop = (a: number | null, b: number | null): string =>
    a === null || b === null ? 'n/a' : `${a.toFixed(1)} / ${b.toFixed(1)}`;
  return [
    String(s.devices),
    `${s.turnsDone}/${s.turnsExpected}`,
    pair(s.eosToFirstFrameMs),
    pair(s.serverFirstAudioMs),
    pair(s.serverAsrMs),
    pair(s.serverLlmFirstTokenMs),
    pct(s.latePct),
    s.serverLatePct === null ? 'n/a' : pct(s.serverLatePct),
    pct(s.gapPct),
    int(s.underrunMs),
    cpu,
    int(s.serverPeakRssMb),
    loop(s.serverLoopP99Ms, s.serverLoopMaxMs),
    loop(s.simLoopP99Ms, s.simLoopMaxMs),
  ];
}

const WIDTHS = COLUMNS.map((c) => Math.max(c.length, 9));

export function alignedHeader(): string {
  return COLUMNS.map((c, i) => c.padStart(WIDTHS[i] as number)).join('  ');
}

export function alignedRow(s: StepResult): string {
  return stepCells(s)
    .map((c, i) => c.padStart(WIDTHS[i] as number))
    .join('  ');
}

export function markdownTable(steps: readonly StepResult[]): string {
  const lines = [`| ${COLUMNS.join(' | ')} |`, `|${COLUMNS.map(() => '---:').join('|')}|`];
  for (const s of steps) lines.push(`| ${stepCells(s).join(' | ')} |`);
  return lines.join('\n');
}

export function legend(vadSilenceMs: number | null, startedServer: boolean): string[] {
  return [
    `EoS→1st frame (device): last speech packet sent → first downlink audio frame; it includes the server's VAD silence window (vad.minSilenceMs = ${vadSilenceMs ?? 'unknown'} ms).`,
    startedServer
      ? "server-added: the server log's firstAudioMs (VAD end-of-speech decision → first frame sent); ASR and LLM first token from the same log lines (fake ASR/LLM on loopback). With an early start (vad.earlyStartMs) a turn began at the pause before that decision: what was ready by then counts as 0."
      : 'server-added, ASR, LLM: n/a (the server log is only read when the simulator starts the server).',
    "late %: frame inter-arrival intervals over 65 ms at the device; sent late %: the same measure at the server's send (its pacer, /metrics xiaozhi_downlink_late_intervals_total): the difference arose on the way, mostly in this process's own scheduling on a shared machine; gap %: frames arriving after the device had played everything before them (playback modelled back to back, 60 ms a frame); underrun ms: total dry time.",
    "server CPU: Δcpu/Δwall over the step's turns, in cores (in parentheses: its child processes, such as the espeak-ng helpers); loop p99/max: event-loop delay in ms beyond the 10 ms sampling tick (server: /metrics nodejs_eventloop_lag_*; sim: this process).",
  ];
}

export function idleLines(r: IdleResult): string[] {
  const mb = (v: number | null): string => (v === null ? 'n/a' : `${v.toFixed(1)} MB`);
  return [
    `idle: ${r.connected}/${r.devices} devices connected (${r.transport === 'mqtt' ? 'OTA + MQTT broker, no audio session' : 'OTA + hello'}) in ${int(r.connectMs)} ms` +
      `${r.connectRefusals ? ` (${r.connectRefusals} upgrades refused with 503 and retried after Retry-After)` : ''}; server sessions active: ${r.sessionsActive ?? 'n/a'}`,
    `idle: server RSS with 0 devices ${mb(r.rssBeforeMb)}, with ${r.connected} idle devices ${mb(r.rssIdleMb)} → ${r.rssPerDeviceKb === null ? 'n/a' : `${r.rssPerDeviceKb.toFixed(1)} KB`} per device; after disconnecting ${mb(r.rssAfterDisconnectMb)}`,
    `idle: RSS with the first half connected ${mb(r.rssHalfMb)}; the second half's devices ${r.rssSecondHalfPerDeviceKb === null ? 'n/a' : `${r.rssSecondHalfPerDeviceKb.toFixed(1)} KB`} each (one more device's cost, without what grows once)`,
    `idle: server on Node ${r.serverNode ?? 'n/a'}; its main thread's V8 heap used / reserved, external: with 0 devices ${heap(r.memoryBefore)}, half ${heap(r.memoryHalf)}, all ${heap(r.memoryIdle)}`,
  ];
}

const AFTER_TOKEN_LABEL = "first frame at the device after the model's first token";
const STAGE_LABEL_WIDTH = Math.max(AFTER_TOKEN_LABEL.length, ...STAGES.map(([, l]) => l.length));

/**
 * The voice-to-voice lines under a step's row: p50 / p95 of each stage, in ms after the end of the
 * user's voice, then what the fakes were set to spend on the way and what is left: ours.
 */
export function voiceToVoiceLines(s: Pick<StepResult, 'voiceToVoice'>): string[] {
  const v = s.voiceToVoice;
  if (v.turns === 0) return ['  voice-to-voice: no turn with an answer frame'];
  const out = [
    `  voice-to-voice (the end of the user's voice → the first answer frame at the device), ms after the end of the voice, p50 / p95 over ${v.turns} turns:`,
  ];
  for (const [k, label] of STAGES) {
    const p = v.stages[k];
    const note =
      k === 'endOfTurnMs' && v.heardSilenceMs.n > 0
        ? `   (the server heard ${pair(v.heardSilenceMs)} ms of silence)`
        : k === 'firstAudioByteMs' && p.n === 0
          ? '   (not in the server log)'
          : k === 'firstTokenMs' && p.n > 0 && p.n < v.turns
            ? `   (${p.n} turns)`
            : '';
    out.push(`    ${label.padEnd(STAGE_LABEL_WIDTH)}  ${pair(p).padStart(11)}${note}`);
  }
  const a = v.firstFrameAfterFirstTokenMs;
  if (a.n > 0) out.push(`    ${AFTER_TOKEN_LABEL}  ${pair(a).padStart(11)}   (per turn, ${a.n} turns)`);
  const d = v.providerDelay;
  const m = v.firstFrameAfterFirstAudioMs;
  if (d?.path === 'realtime' && m.n > 0)
    out.push(
      `    ${"first frame after the model's first audio".padEnd(AFTER_TOKEN_LABEL.length)}  ${pair(m).padStart(11)}   (per turn, ${m.n} turns)`,
    );
  if (d && d.totalMs !== null && d.path === 'realtime') {
    out.push(
      `  providers' configured delays on the way: the realtime model's first audio ${int(d.ttsFirstAudioMs)} ms after the commit; ours (voice-to-voice p50 less that, the end-of-turn wait included): ${int(v.oursP50Ms)} ms`,
    );
  } else if (d && d.totalMs !== null) {
    const parts = [
      `ASR ${int(d.asrMs)} (mean, ${int(d.asrAudioMs)} ms of audio)`,
      `LLM first token ${int(d.llmFirstTokenMs)}`,
      d.path === 'streaming'
        ? `tokens until the streaming TTS's first sentence ${int(d.firstSentenceStreamMs)}`
        : `first sentence's tokens ${int(d.firstSentenceStreamMs)}`,
      `${d.path === 'streaming' ? 'streaming ' : ''}TTS first audio ${int(d.ttsFirstAudioMs)}`,
    ];
    out.push(
      `  providers' configured delays on the way: ${parts.join(' + ')} = ${int(d.totalMs)} ms; ours (voice-to-voice p50 less that): ${int(v.oursP50Ms)} ms`,
    );
  }
  return out;
}

export const VOICE_COLUMNS = [
  'devices',
  'turns',
  'voice-to-voice p50/p95',
  ...STAGES.filter(([k]) => k !== 'voiceToVoiceMs').map(([, l]) => `${l} p50/p95`),
  "first frame after the model's first token p50/p95",
  "providers' delays",
  'ours p50',
] as const;

/** One Markdown row per step: voice-to-voice and its stages (ms after the end of the voice). */
export function voiceToVoiceTable(steps: ReadonlyArray<Pick<StepResult, 'devices' | 'voiceToVoice'>>): string {
  const lines = [`| ${VOICE_COLUMNS.join(' | ')} |`, `|${VOICE_COLUMNS.map(() => '---:').join('|')}|`];
  for (const s of steps) {
    const v = s.voiceToVoice;
    const cells = [
      String(s.devices),
      String(v.turns),
      pair(v.stages.voiceToVoiceMs),
      ...STAGES.filter(([k]) => k !== 'voiceToVoiceMs').map(([k]) => pair(v.stages[k])),
      pair(v.firstFrameAfterFirstTokenMs),
      int(v.providerDelay?.totalMs),
      int(v.oursP50Ms),
    ];
    lines.push(`| ${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}

function heap(h: HeapFigures | null): string {
  return h === null
    ? 'n/a'
    : `${h.heapUsedMb.toFixed(1)} / ${h.heapTotalMb.toFixed(1)} MB (young generation ${h.newSpaceMb === null ? 'n/a' : h.newSpaceMb.toFixed(0)} MB), ${h.externalMb.toFixed(1)} MB`;
}
