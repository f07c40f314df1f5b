/**
 * `npm run simulate -- --devices 1,10,25 --turns 2 [--url ws://…] [--barge-in] [--idle N]`
 *
 * A fleet simulator: many devices speaking the real xiaozhi protocol to the server at once (OTA,
 * WebSocket, hello, spoken turns as real-time Opus), measuring what a device would notice (end of
 * speech → first audio frame, late and missing frames) and what the server spends (CPU, RSS,
 * event-loop lag, per-stage latency from its log). Without `--url` it starts the fake LLM, the fake
 * ASR and the real server as a child process on loopback, and always stops them again.
 * See docs/simulate.md.
 */
import { randomInt, randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { startMachineProbe, type MachineProbe } from './sim/cpu-window.ts';
import {
  FleetDevice,
  prepareUtterance,
  simMac,
  type DeviceIdentity,
  type FleetMember,
  type TurnRecord,
  type UtteranceAudio,
} from './sim/device.ts';
import { MqttFleetDevice } from './sim/mqtt-device.ts';
import { defaultOptions, parseArgs, USAGE, type SimulationOptions } from './sim/options.ts';
import {
  alignedHeader,
  alignedRow,
  burstLine,
  simLine,
  stealWarning,
  talkingLine,
  idleLines,
  legend,
  markdownTable,
  stagesLine,
  voiceToVoiceLines,
  voiceToVoiceTable,
  type BurstCpu,
  type HeapFigures,
  type IdleResult,
  type SimulationResult,
  type StepResult,
  type TurnStages,
} from './sim/report.ts';
import {
  remoteServer,
  startLocalServer,
  type MetricsSnapshot,
  type ServerTurnTiming,
  type SimServer,
} from './sim/server.ts';
import { freePort } from '../integration/ops/helpers/spawned-server.ts';
import { p50p95, sleep, sumPlayback, type P50P95 } from './sim/stats.ts';
import type { AsrWork, FakeStats } from './sim/lean-fakes.ts';
import { describeLatency } from './sim/provider-profiles.ts';
import {
  matchServerTurn,
  providerDelay,
  summarizeVoiceToVoice,
  voiceTurn,
  type VoiceToVoice,
  type VoiceTurn,
} from './sim/voice-to-voice.ts';

export type { SimulationOptions } from './sim/options.ts';
export type { SimulationResult, StepResult, IdleResult } from './sim/report.ts';

/** The sampling tick of both event-loop monitors (ours, and prom-client's default). */
const LOOP_TICK_MS = 10;
const MB = 1024 * 1024;

/** The soft limit on open files of this process, when readable. */
function openFileLimit(): number | null {
  try {
    const m = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/** Late send intervals (over 65 ms) as a share of all, from the server's turn timings; NaN without frames. */
function sentLatePct(st: ReadonlyArray<ServerTurnTiming>): number {
  const all = st.reduce((a, t) => a + t.frameIntervals, 0);
  return all > 0 ? (st.reduce((a, t) => a + t.lateIntervals, 0) / all) * 100 : NaN;
}

type TimingKey = 'asrMs' | 'llmFirstTokenMs' | 'firstSentenceMs' | 'firstAudioMs';

/** The figures of one stage over some turns (a turn that has none, e.g. no answer, is left out). */
function stageMs(ts: ReadonlyArray<ServerTurnTiming>, k: TimingKey): number[] {
  return ts.flatMap((t) => (t[k] === undefined ? [] : [t[k] as number]));
}

/** Each device's first turn of the step (the burst: all end within --stagger-ms), and the rest. */
function splitTurns(st: ReadonlyArray<ServerTurnTiming>): { first: ServerTurnTiming[]; later: ServerTurnTiming[] } {
  const seen = new Set<string>();
  const first: ServerTurnTiming[] = [];
  const later: ServerTurnTiming[] = [];
  for (const t of st) {
    (seen.has(t.deviceId) ? later : first).push(t);
    seen.add(t.deviceId);
  }
  return { first, later };
}

/**
 * Stage figures of each device's first turn in the step (the log holds them in order) and of its
 * later turns: the first turns start together, the later ones as the answers before them end.
 */
function turnStages(st: ReadonlyArray<ServerTurnTiming>): { first: TurnStages; later: TurnStages } {
  const { first, later } = splitTurns(st);
  const of = (ts: ServerTurnTiming[]): TurnStages => {
    const ms = (k: TimingKey): P50P95 => p50p95(stageMs(ts, k));
    return { turns: ts.length, asr: ms('asrMs'), firstSentence: ms('firstSentenceMs'), firstFrame: ms('firstAudioMs') };
  };
  return { first: of(first), later: of(later) };
}

/** Every 20 ms: two samples a 60 ms frame, cheap enough to leave on (on the probe's own thread). */
const CPU_SAMPLE_MS = 20;
/** The self-started server's RSS, for the step's peak. */
const RSS_SAMPLE_MS = 100;
/** Bursts shorter than this are not reported: /proc counts CPU time in 10 ms ticks. */
const MIN_BURST_MS = 200;

/** The machine's and the server's CPU use between two times of this process's clock; null when too short to count. */
function cpuShare(sampler: MachineProbe, from: number, to: number): BurstCpu | null {
  const w = sampler.window(from, to);
  // A lone device's burst lasts a few ms: less than the ticks /proc counts in.
  if (!w?.server || w.ms < MIN_BURST_MS) return null;
  return {
    windowMs: w.ms,
    machineBusyPct: w.machineBusyPct,
    stealPct: w.stealPct,
    server: w.server,
    rig: w.rig,
    cpuWaitMs: w.cpuWaitMs,
    timer: w.timer,
    cpus: availableParallelism(),
  };
}

/**
 * CPU use during the burst of the step's first turns, as the server saw it: from the first of those turns
 * to start (at its end-of-speech decision, or at a pause before it with an early start) to the
 * moment it had sent 95 % of their first frames. Null when
 * the server is not ours (no log) or too few first turns got a frame.
 */
function burstCpu(st: ReadonlyArray<ServerTurnTiming> | null, sampler: MachineProbe | null): BurstCpu | null {
  if (!sampler || !st) return null;
  const first = splitTurns(st).first.filter((t) => t.endedAt !== undefined);
  const frames = first
    .flatMap((t) => (t.firstAudioMs === undefined ? [] : [(t.endedAt as number) + t.firstAudioMs]))
    .sort((a, b) => a - b);
  if (first.length === 0 || frames.length < Math.ceil(first.length / 2)) return null;
  // From the first turn's start: at the end-of-speech decision, or earlier at a pause (early start).
  const from = Math.min(...first.map((t) => (t.endedAt as number) - (t.earlyStartMs ?? 0)));
  const to = frames[Math.min(frames.length - 1, Math.ceil(0.95 * frames.length) - 1)] as number;
  return cpuShare(sampler, from, to);
}

/**
 * CPU use while every device was sending the speech of its first turn (from the last one to
 * start to the first one to finish): what devices cost while they talk, before any answer.
 */
function talkingCpu(recs: readonly TurnRecord[], sampler: MachineProbe | null): BurstCpu | null {
  const first = recs.filter((r) => r.turn === 0 && r.speechStartAt !== undefined && r.speechEndAt !== undefined);
  if (!sampler || first.length === 0) return null;
  return cpuShare(
    sampler,
    Math.max(...first.map((r) => r.speechStartAt as number)),
    Math.min(...first.map((r) => r.speechEndAt as number)),
  );
}

/** `over` merged into `base`, objects key by key (the transport's config under the user's --set). */
function mergeConfig(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) {
    const b = out[k];
    const isObj = (x: unknown): x is Record<string, unknown> =>
      typeof x === 'object' && x !== null && !Array.isArray(x);
    out[k] = isObj(b) && isObj(v) ? mergeConfig(b, v) : v;
  }
  return out;
}

/** The heap figures of a /metrics snapshot, or null when it lacks one of them. */
function memoryOf(m: MetricsSnapshot | null): HeapFigures | null {
  if (m?.heapUsedBytes === undefined || m.heapTotalBytes === undefined || m.externalBytes === undefined) return null;
  return {
    heapUsedMb: m.heapUsedBytes / MB,
    heapTotalMb: m.heapTotalBytes / MB,
    externalMb: m.externalBytes / MB,
    newSpaceMb: m.newSpaceBytes === undefined ? null : m.newSpaceBytes / MB,
  };
}

function countErrors(recs: ReadonlyArray<{ error?: string }>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of recs) if (r.error) out[r.error] = (out[r.error] ?? 0) + 1;
  return out;
}

/** The fakes' work between two snapshots of their counters; null when either is missing. */
function fakeWorkBetween(a: FakeStats | null, b: FakeStats | null): FakeStats | null {
  if (!a || !b) return null;
  return {
    asr: {
      requests: b.asr.requests - a.asr.requests,
      audioMs: b.asr.audioMs - a.asr.audioMs,
      delayMs: b.asr.delayMs - a.asr.delayMs,
    },
    chats: b.chats - a.chats,
    speeches: b.speeches - a.speeches,
  };
}

/**
 * Voice-to-voice of a step's done turns: each device turn with the server's log line for it
 * (none when the server is not ours: then only the device's figure), and the providers' delays
 * from the fakes' own counters (self-started server only).
 */
function stepVoiceToVoice(
  opts: SimulationOptions,
  recs: readonly TurnRecord[],
  st: ReadonlyArray<ServerTurnTiming> | null,
  asr: AsrWork | null,
): VoiceToVoice {
  const perTurn = recs
    .filter((r) => r.done)
    .flatMap((r): VoiceTurn[] => {
      const v = voiceTurn(r, st ? matchServerTurn(r, st) : undefined);
      return v ? [v] : [];
    });
  return summarizeVoiceToVoice(perTurn, st ? providerDelay(opts.providers, opts.answer, asr) : null);
}

class Run {
  readonly opts: SimulationOptions;
  readonly abort = new AbortController();
  readonly runId = randomInt(256);
  readonly warnings: string[] = [];
  readonly #warned = new Set<string>();
  server!: SimServer;
  audio!: UtteranceAudio;
  readonly live = new Set<FleetMember>();

  constructor(opts: SimulationOptions) {
    this.opts = opts;
    // Every device waits on the run's signal: hundreds of listeners are expected, not a leak.
    setMaxListeners(0, this.abort.signal);
  }

  /** A device of the run's transport. */
  device(id: DeviceIdentity): FleetMember {
    return this.opts.transport === 'mqtt' ? new MqttFleetDevice(id) : new FleetDevice(id);
  }

  warn(msg: string): void {
    if (this.#warned.has(msg)) return;
    this.#warned.add(msg);
    this.warnings.push(msg);
    this.opts.print(`warning: ${msg}`);
  }

  check(): void {
    if (this.abort.signal.aborted) throw new Error(`run stopped: ${String(this.abort.signal.reason)}`);
    const exited = this.server.exitedEarly();
    if (exited) throw new Error(exited);
  }

  /** Connects devices in batches; returns those that got the server hello. */
  async connectAll(
    devs: FleetMember[],
    openSession = true,
  ): Promise<{ connected: FleetMember[]; errors: Array<{ error: string }> }> {
    const connected: FleetMember[] = [];
    const errors: Array<{ error: string }> = [];
    for (let i = 0; i < devs.length; i += this.opts.batch) {
      // A pause between batches lets the server's load signals (admission) calm down again.
      if (i > 0) await sleep(this.opts.batchPauseMs);
      this.check();
      const batch = devs.slice(i, i + this.opts.batch);
      const results = await Promise.allSettled(
        batch.map((d) => {
          this.live.add(d);
          return d.connect({
            wsUrl: this.server.wsUrl,
            otaUrl: this.server.otaUrl,
            ota: this.opts.ota,
            ...(this.opts.token ? { token: this.opts.token } : {}),
            timeoutMs: this.opts.connectTimeoutMs,
            retryForMs: this.opts.connectRetryMs,
            signal: this.abort.signal,
            warn: (m) => this.warn(m),
            openSession,
          });
        }),
      );
      results.forEach((r, j) => {
        const d = batch[j] as FleetMember;
        if (r.status === 'fulfilled') connected.push(d);
        else {
          errors.push({ error: `connect: ${r.reason instanceof Error ? r.reason.message : String(r.reason)}` });
          void d.close();
        }
      });
    }
    return { connected, errors };
  }

  async closeAll(devs: Iterable<FleetMember>): Promise<void> {
    const list = [...devs];
    for (const d of list) this.live.delete(d);
    await Promise.all(list.map((d) => d.close()));
  }

  /** Waits until the server has no sessions left (when it says), then the settle time. */
  async settle(extraMs = this.opts.settleMs): Promise<void> {
    const deadline = performance.now() + 15_000;
    while (performance.now() < deadline && !this.abort.signal.aborted) {
      const m = await this.server.metrics();
      if (m?.sessionsActive === undefined || m.sessionsActive === 0) break;
      await sleep(200);
    }
    await sleep(extraMs);
  }

  /**
   * Samples a server's RSS through `rss()` until stopped; returns the peak seen (bytes) and the
   * last HWM. For a server someone else runs (its /metrics, every second): the probe thread
   * samples a self-started one.
   */
  rssSampler(): { stop(): Promise<{ peak: number | null; hwm: number | null }> } {
    let peak: number | null = null;
    let hwm: number | null = null;
    let running = true;
    const period = 1000;
    const loop = (async () => {
      while (running) {
        const r = await this.server.rss();
        if (r) {
          peak = Math.max(peak ?? 0, r.rss);
          hwm = r.hwm;
        }
        await sleep(period);
      }
    })();
    return {
      stop: async () => {
        running = false;
        await loop;
        const r = await this.server.rss();
        if (r) {
          peak = Math.max(peak ?? 0, r.rss);
          hwm = r.hwm;
        }
        return { peak, hwm };
      },
    };
  }

  async turns(devs: FleetMember[], turns: number, staggerMs: number): Promise<TurnRecord[]> {
    const start = performance.now() + 100;
    const per = await Promise.all(
      devs.map(async (d, di) => {
        await sleep(start + Math.random() * staggerMs - performance.now());
        const out: TurnRecord[] = [];
        for (let t = 0; t < turns; t++) {
          const barge = this.opts.bargeIn && (di + t) % 2 === 1;
          out.push(
            await d.turn(t, {
              audio: this.audio,
              sttTimeoutMs: this.opts.sttTimeoutMs,
              answerTimeoutMs: this.opts.answerTimeoutMs,
              bargeInAfterFrames: barge ? this.opts.bargeInAfterFrames : null,
              signal: this.abort.signal,
            }),
          );
          if (this.abort.signal.aborted) break;
        }
        return out;
      }),
    );
    return per.flat();
  }

  async step(n: number, stepNo: number): Promise<StepResult> {
    const o = this.opts;
    const devs = Array.from({ length: n }, (_, i) =>
      this.device({ index: i, deviceId: simMac(this.runId, stepNo, i), clientId: randomUUID() }),
    );
    const ids = new Set(devs.map((d) => d.id.deviceId));
    const { connected, errors: connectErrors } = await this.connectAll(devs);
    this.check();

    await this.server.metrics(); // resets prom-client's event-loop histogram: later scrapes cover the step
    this.server.resetLag();
    const cpu0 = await this.server.cpu();
    const probe = await startMachineProbe({
      everyMs: CPU_SAMPLE_MS,
      rssEveryMs: this.server.started ? RSS_SAMPLE_MS : null,
      server: this.server.processTree(),
      fakesPid: this.server.fakesPid,
    });
    // The probe thread samples a self-started server's RSS; a server someone else runs, its /metrics.
    const rss = probe && this.server.started ? null : this.rssSampler();
    const fakes0 = await this.server.fakeStats();
    const loop = monitorEventLoopDelay({ resolution: LOOP_TICK_MS });
    loop.enable();
    const t0 = performance.now();
    const simCpu0 = process.cpuUsage();
    let recs: TurnRecord[];
    let turnsEnd = t0;
    try {
      recs = await this.turns(connected, o.turns, o.staggerMs);
    } finally {
      loop.disable();
      turnsEnd = performance.now();
      await probe?.stop(); // takes a last sample, after turnsEnd
    }
    const wallMs = performance.now() - t0;
    const whole = probe?.window(t0, turnsEnd) ?? null;
    const stealPct = whole?.stealPct ?? null;
    const simCpu = process.cpuUsage(simCpu0);
    const loadAvg1 = loadavg()[0] ?? NaN;
    const cpu1 = await this.server.cpu();
    await this.server.metrics();
    const serverLag = this.server.lagSinceReset();
    const mem = (await rss?.stop()) ?? probe?.rss() ?? { peak: null, hwm: null };
    await this.closeAll(devs);
    await this.settle();
    const fakeWork = fakeWorkBetween(fakes0, await this.server.fakeStats());

    const done = recs.filter((r) => r.done);
    const play = sumPlayback(recs.map((r) => r.playback));
    const wallS = cpu0 && cpu1 ? (cpu1.at - cpu0.at) / 1000 : NaN;
    const st = this.server.started
      ? this.server.timings.filter((t) => ids.has(t.deviceId) && t.source === 'voice')
      : null;
    const nums = (k: TimingKey): number[] => stageMs(st ?? [], k);
    const outcomes: Record<string, number> = {};
    for (const t of st ?? []) outcomes[t.outcome] = (outcomes[t.outcome] ?? 0) + 1;
    const lag = (v: number | undefined): number | null =>
      v === undefined ? null : Math.max(0, v * 1000 - LOOP_TICK_MS);
    return {
      devices: n,
      connected: connected.length,
      connectRefusals: devs.reduce((a, d) => a + d.refusals, 0),
      turnsExpected: n * o.turns,
      turnsDone: done.length,
      bargeIns: recs.filter((r) => r.bargeIn).length,
      eosToFirstFrameMs: p50p95(done.flatMap((r) => (r.eosToFirstFrameMs === undefined ? [] : [r.eosToFirstFrameMs]))),
      eosToSttMs: p50p95(recs.flatMap((r) => (r.eosToSttMs === undefined ? [] : [r.eosToSttMs]))),
      abortToStopMs: p50p95(recs.flatMap((r) => (r.abortToStopMs === undefined ? [] : [r.abortToStopMs]))),
      voiceToVoice: stepVoiceToVoice(o, recs, st, fakeWork?.asr ?? null),
      fakeWork,
      serverFirstAudioMs: st ? p50p95(nums('firstAudioMs')) : null,
      serverAsrMs: st ? p50p95(nums('asrMs')) : null,
      serverLlmFirstTokenMs: st ? p50p95(nums('llmFirstTokenMs')) : null,
      serverFirstSentenceMs: st ? p50p95(nums('firstSentenceMs')) : null,
      serverStages: st ? turnStages(st) : null,
      serverTurns: st,
      serverOutcomes: st ? outcomes : null,
      burstCpu: burstCpu(st, probe),
      talkingCpu: talkingCpu(recs, probe),
      serverLateFrames: st ? st.reduce((a, t) => a + t.lateFrames, 0) : null,
      serverLatePct: st ? sentLatePct(st) : null,
      frames: play.frames,
      intervals: play.intervals,
      lateIntervals: play.lateIntervals,
      latePct: play.intervals > 0 ? (play.lateIntervals / play.intervals) * 100 : NaN,
      gaps: play.gaps,
      gapPct: play.intervals > 0 ? (play.gaps / play.intervals) * 100 : NaN,
      underrunMs: play.underrunMs,
      serverCpuCores: cpu0 && cpu1 && wallS > 0 ? (cpu1.cpuS - cpu0.cpuS) / wallS : null,
      serverChildCpuCores:
        cpu0?.childCpuS != null && cpu1?.childCpuS != null && wallS > 0
          ? (cpu1.childCpuS - cpu0.childCpuS) / wallS
          : null,
      serverPeakRssMb: mem.peak === null ? null : mem.peak / MB,
      serverHwmMb: mem.hwm === null ? null : mem.hwm / MB,
      serverLoopP99Ms: lag(serverLag?.p99S),
      serverLoopMaxMs: lag(serverLag?.maxS),
      simLoopP99Ms: Math.max(0, loop.percentile(99) / 1e6 - LOOP_TICK_MS),
      simLoopMaxMs: Math.max(0, loop.max / 1e6 - LOOP_TICK_MS),
      simCpuCores: (simCpu.user + simCpu.system) / 1000 / wallMs,
      loadAvg1,
      stealPct,
      timerJitter: whole?.timer ?? null,
      cpus: availableParallelism(),
      wallMs,
      errors: countErrors([...connectErrors, ...recs]),
      turns: recs,
    };
  }

  /** RSS now, as the median of a few samples (bytes). */
  async rssNow(): Promise<number | null> {
    const xs: number[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await this.server.rss();
      if (r) xs.push(r.rss);
      await sleep(300);
    }
    return xs.length ? (xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number) : null;
  }

  async idle(n: number): Promise<IdleResult> {
    // One batch connects and leaves first, so that what the first sessions create once per
    // process (codecs, models, JIT) is in the baseline and not charged to the idle devices.
    // An idle MQTT device is connected to the broker without an audio session (the firmware's idle state).
    const openSession = this.opts.transport !== 'mqtt';
    const warm = Array.from({ length: Math.min(n, this.opts.batch) }, (_, i) =>
      this.device({ index: i, deviceId: simMac(this.runId, 249, i), clientId: randomUUID() }),
    );
    await this.connectAll(warm, openSession);
    await this.closeAll(warm);
    await this.settle(Math.max(2000, this.opts.settleMs));
    const before = await this.rssNow();
    const mBefore = await this.server.metrics();
    const devs = Array.from({ length: n }, (_, i) =>
      this.device({ index: i, deviceId: simMac(this.runId, 250, i), clientId: randomUUID() }),
    );
    this.opts.print(`idle: connecting ${n} devices over ${this.opts.transport}, ${this.opts.batch} at a time`);
    const t0 = performance.now();
    // In two halves, RSS measured after each: growth that comes once (a heap or an allocator
    // arena reaching its working size) lands mostly in the first half, so the second half's
    // slope is what one more device costs.
    const half = Math.ceil(n / 2);
    const first = await this.connectAll(devs.slice(0, half), openSession);
    this.check();
    await sleep(Math.max(2000, this.opts.settleMs));
    const mid = await this.rssNow();
    const mMid = await this.server.metrics();
    const second = await this.connectAll(devs.slice(half), openSession);
    const connected = [...first.connected, ...second.connected];
    const errors = [...first.errors, ...second.errors];
    const connectMs = performance.now() - t0;
    this.check();
    // Let the sessions finish their start-up (device MCP initialize, tools/list) before measuring.
    await sleep(Math.max(2000, this.opts.settleMs));
    const m = await this.server.metrics();
    const during = await this.rssNow();
    if (this.opts.idleHoldMs > 0) {
      this.opts.print(
        `idle: holding ${connected.length} devices for ${Math.round(this.opts.idleHoldMs / 1000)} s (server pid ${this.server.pid ?? 'n/a'})`,
      );
      await sleep(this.opts.idleHoldMs);
      this.check();
    }
    await this.closeAll(devs);
    await this.settle();
    const after = await this.rssNow();
    return {
      devices: n,
      transport: this.opts.transport,
      connected: connected.length,
      connectRefusals: devs.reduce((a, d) => a + d.refusals, 0),
      connectMs,
      sessionsActive: m?.sessionsActive ?? null,
      rssBeforeMb: before === null ? null : before / MB,
      rssIdleMb: during === null ? null : during / MB,
      rssPerDeviceKb:
        before !== null && during !== null && connected.length > 0 ? (during - before) / connected.length / 1024 : null,
      rssAfterDisconnectMb: after === null ? null : after / MB,
      rssHalfMb: mid === null ? null : mid / MB,
      rssSecondHalfPerDeviceKb:
        mid !== null && during !== null && second.connected.length > 0
          ? (during - mid) / second.connected.length / 1024
          : null,
      memoryHalf: memoryOf(mMid),
      serverNode: m?.nodeVersion ?? mBefore?.nodeVersion ?? null,
      memoryBefore: memoryOf(mBefore),
      memoryIdle: memoryOf(m),
      errors: countErrors(errors),
    };
  }
}

/**
 * Runs the simulation and returns every figure. Starts (and always stops) its own server unless
 * `url` is given. Bounded by `maxRunMs` and every wait's own timeout.
 */
export async function runSimulation(partial: Partial<SimulationOptions> = {}): Promise<SimulationResult> {
  const opts: SimulationOptions = { ...defaultOptions(), ...partial };
  const print = opts.print;
  const biggest = Math.max(0, opts.idle, ...opts.devices);
  const limit = openFileLimit();
  if (limit !== null && biggest > limit - 256) {
    throw new Error(
      `${biggest} devices need more open files than this process may have (ulimit -n ${limit}); use at most ${limit - 256}`,
    );
  }
  const run = new Run(opts);
  const onAbort = (): void => run.abort.abort(opts.signal?.reason ?? 'stopped');
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  if (opts.signal?.aborted) onAbort();
  const watchdog = setTimeout(
    () => run.abort.abort(`time limit of ${Math.round(opts.maxRunMs / 1000)} s reached`),
    opts.maxRunMs,
  );
  watchdog.unref();
  const started = performance.now();
  const steps: StepResult[] = [];
  let idle: IdleResult | null = null;
  try {
    if (opts.url) {
      run.server = remoteServer(opts.url, opts.otaUrl, opts.vadSilenceMs);
      print(`server: ${opts.url} (not started here; probes via ${run.server.httpUrl}/metrics)`);
    } else {
      print('server: starting the fake LLM, the fake ASR and the real server (child process) on 127.0.0.1 …');
      // Over MQTT the server runs its broker (and UDP audio) on free loopback ports; OTA hands them out.
      // The whole fleet connects from one address at once, as sim/server.ts lifts the other per-address limits.
      const transportConfig =
        opts.transport === 'mqtt'
          ? {
              mqtt: {
                enabled: true,
                host: '127.0.0.1',
                port: await freePort(),
                udpPort: 0,
                maxPendingPerAddress: 10_000,
              },
            }
          : {};
      for (const line of describeLatency(opts.profile, opts.providers)) print(line);
      run.server = await startLocalServer({
        transcript: opts.transcript,
        answer: opts.answer,
        providers: opts.providers,
        configOverrides: mergeConfig(transportConfig, opts.serverConfig),
        env: opts.serverEnv,
        nodeArgs: opts.serverArgs,
        ...(opts.serverNode ? { nodeBinary: opts.serverNode } : {}),
        ...(opts.serverLog ? { logFile: opts.serverLog } : {}),
        readyTimeoutMs: 45_000,
        log: print,
      });
      print(
        `server: pid ${run.server.pid} at ${run.server.wsUrl}${opts.transport === 'mqtt' ? ' (devices over MQTT+UDP)' : ''}`,
      );
    }
    run.check();
    if (opts.devices.length > 0) run.audio = await prepareUtterance(opts.utterance);
    if (opts.devices.length > 0)
      print(
        `utterance: "${opts.utterance}", ${run.audio.speechMs} ms of speech, ${run.audio.speech.length} packets incl. 300 ms lead-in`,
      );

    if (opts.devices.length > 0 && opts.warmup) {
      const w = run.device({ index: 0, deviceId: simMac(run.runId, 0, 0), clientId: randomUUID() });
      const { connected, errors } = await run.connectAll([w]);
      if (connected.length === 0) throw new Error(`warm-up device could not connect: ${errors[0]?.error ?? 'unknown'}`);
      const [rec] = await run.turns(connected, 1, 0);
      await run.closeAll([w]);
      if (!rec?.done) run.warn(`warm-up turn did not complete (${rec?.error ?? 'unknown'})`);
      await run.settle();
    }

    if (opts.devices.length > 0) {
      for (const line of legend(run.server.vadSilenceMs, run.server.started)) print(line);
      print(alignedHeader());
      for (const [i, n] of opts.devices.entries()) {
        run.check();
        const s = await run.step(n, i + 1);
        steps.push(s);
        print(alignedRow(s));
        const errs = Object.entries(s.errors);
        if (errs.length) print(`  problems: ${errs.map(([e, c]) => `${c}× ${e}`).join('; ')}`);
        const stages = stagesLine(s);
        if (stages) print(stages);
        for (const line of voiceToVoiceLines(s)) print(line);
        const talking = talkingLine(s);
        if (talking) print(talking);
        const burst = burstLine(s);
        if (burst) print(burst);
        print(simLine(s));
        const noisy = stealWarning(i + 1, s.stealPct);
        if (noisy) run.warn(noisy);
        if (s.connectRefusals)
          print(
            `  connect: ${s.connectRefusals} upgrades refused with 503 (server admission) and retried after Retry-After`,
          );
        if (s.bargeIns > 0)
          print(
            `  barge-in: ${s.bargeIns} turns aborted mid-answer; abort → tts stop p50/p95 ${Math.round(s.abortToStopMs.p50)} / ${Math.round(s.abortToStopMs.p95)} ms`,
          );
        // A server that died during the step: its row above is the evidence; stop here.
        run.check();
      }
    }
    if (opts.idle > 0) {
      run.check();
      idle = await run.idle(opts.idle);
      for (const line of idleLines(idle)) print(line);
      const errs = Object.entries(idle.errors);
      if (errs.length) print(`  problems: ${errs.map(([e, c]) => `${c}× ${e}`).join('; ')}`);
    }
    if (steps.length > 0) {
      print('');
      print(markdownTable(steps));
      print('');
      print(voiceToVoiceTable(steps));
    }
  } finally {
    clearTimeout(watchdog);
    opts.signal?.removeEventListener('abort', onAbort);
    await run.closeAll(run.live).catch(() => {});
    await run.server?.stop();
  }
  const result: SimulationResult = {
    transport: opts.transport,
    profile: run.server.started ? opts.profile : null,
    providers: run.server.started ? opts.providers : null,
    startedServer: run.server.started,
    serverPid: run.server.pid,
    wsUrl: run.server.wsUrl,
    vadSilenceMs: run.server.vadSilenceMs,
    turnsPerDevice: opts.turns,
    bargeIn: opts.bargeIn,
    steps,
    idle,
    warnings: run.warnings,
    serverErrors: [...run.server.errors],
    wallMs: performance.now() - started,
  };
  if (result.serverErrors.length)
    print(`server logged ${result.serverErrors.length} error line(s), last: ${result.serverErrors.at(-1)}`);
  if (opts.jsonFile) {
    writeFileSync(opts.jsonFile, JSON.stringify(result, null, 2));
    print(`raw results written to ${opts.jsonFile}`);
  }
  return result;
}

async function main(): Promise<void> {
  let opts;
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (err) {
    console.error(`simulate: ${err instanceof Error ? err.message : String(err)}\n\n${USAGE}`);
    process.exit(2);
  }
  if (opts === 'help') {
    console.log(USAGE);
    return;
  }
  const stop = new AbortController();
  let signals = 0;
  const onSignal = (sig: NodeJS.Signals): void => {
    signals++;
    console.error(`simulate: ${sig}: stopping (again to exit at once)`);
    stop.abort(sig);
    // The 'exit' hook in sim/server.ts kills the child server synchronously.
    if (signals > 1) process.exit(130);
    setTimeout(() => process.exit(130), 10_000).unref();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('SIGHUP', onSignal);
  await runSimulation({ ...opts, signal: stop.signal });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().then(
    () => process.exit(process.exitCode ?? 0),
    (err: unknown) => {
      const stopped = err instanceof Error && err.message.startsWith('run stopped');
      console.error(
        `simulate failed: ${err instanceof Error ? (stopped ? err.message : (err.stack ?? err.message)) : String(err)}`,
      );
      process.exit(1);
    },
  );
}
