/**
 * The server the fleet simulator talks to: either started here (fake LLM and fake ASR on loopback in
 * their own process, the real server as a child process with a temporary config, its JSON log
 * parsed line by line),
 * or an already running one given by URL. Both expose the same probes: CPU, RSS, event-loop lag
 * and live sessions, from /proc for a child and from /metrics when available.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { freePort, spawnServer, type SpawnedServer } from '../../integration/ops/helpers/spawned-server.ts';
import type { TurnTimings } from '../../../voice/conversation/voice-deps.ts';
import type { FakeStats } from './lean-fakes.ts';
import { childPids, procCpu, procRss } from './proc.ts';
import { PROFILES, type ProviderLatency } from './provider-profiles.ts';
import { serverCommandArgs } from './start-command.ts';
import { parsePrometheus, sleep } from './stats.ts';

/**
 * One `turn timings` line of the server log: the turn's `TurnTimings` as logged (its tools left
 * out), with the session's fields pino adds.
 */
export type ServerTurnTiming = Omit<TurnTimings, 'tools'> & {
  deviceId: string;
  sessionId: string;
  /**
   * Read when the server logs them (sim/voice-to-voice.ts): the silence heard before the
   * end-of-turn decision; and from that decision, the model's first token and the TTS's first
   * audio byte.
   */
  endOfTurnMs?: number;
  firstTokenMs?: number;
  ttsFirstAudioMs?: number;
  /**
   * The server's end-of-speech decision on this process's performance.now() clock (the log line's
   * wall-clock time less `totalMs`; both processes read the same system clock).
   */
  endedAt?: number;
};

export interface CpuSample {
  /** performance.now() of the sample. */
  at: number;
  /** CPU seconds of the server process itself. */
  cpuS: number;
  /** CPU seconds of its children, live (espeak-ng helpers, pocketsphinx) and reaped (ffmpeg, ...); null when unknown. */
  childCpuS: number | null;
}

export interface MetricsSnapshot {
  cpuS?: number;
  rssBytes?: number;
  sessionsActive?: number;
  /** prom-client's event-loop lag over the time since the previous scrape (it resets on each scrape), seconds. */
  lagP99S?: number;
  lagMaxS?: number;
  /** The server's Node.js version (`nodejs_version_info`), e.g. `v24.1.0`. */
  nodeVersion?: string;
  /** V8 heap used and reserved, and memory outside it that V8 knows of (Buffers, ArrayBuffers), bytes. */
  heapUsedBytes?: number;
  heapTotalBytes?: number;
  externalBytes?: number;
  /** V8's young generation as reserved (`nodejs_heap_space_size_total_bytes{space="new"}`). */
  newSpaceBytes?: number;
}

export interface SimServer {
  /** True when this module started the server (and must stop it). */
  readonly started: boolean;
  readonly pid: number | null;
  readonly httpUrl: string;
  readonly wsUrl: string;
  readonly otaUrl: string;
  /** vad.minSilenceMs of the server, when known. */
  readonly vadSilenceMs: number | null;
  /** `turn timings` lines seen so far (only when started here). */
  readonly timings: ServerTurnTiming[];
  /** Error-level log lines (msg only), most recent last, bounded. */
  readonly errors: string[];
  /** Set when the child exited on its own. */
  exitedEarly(): string | null;
  cpu(): Promise<CpuSample | null>;
  /** The server process and its live children (espeak-ng helpers, pocketsphinx), when started here. */
  processTree(): { pid: number; children: number[] } | null;
  /** The fakes' process (fake LLM and ASR), when started here. */
  readonly fakesPid: number | null;
  /** What the fakes did so far, when started here. */
  fakeStats(): Promise<FakeStats | null>;
  /** Current RSS in bytes, and the high-water mark when known. */
  rss(): Promise<{ rss: number; hwm: number | null } | null>;
  metrics(): Promise<MetricsSnapshot | null>;
  /**
   * The server's event-loop lag since `resetLag()`: prom-client resets its histogram on every
   * scrape, so each scrape covers the time since the one before; this keeps the worst p99 and max
   * of all scrapes since then (seconds), or null when /metrics had none.
   */
  lagSinceReset(): { p99S: number; maxS: number } | null;
  resetLag(): void;
  stop(): Promise<void>;
}

/** Pids of children started here and not yet reaped: killed synchronously if the process exits. */
const liveChildren = new Set<number>();
let exitHookInstalled = false;
function guardChild(pid: number): void {
  liveChildren.add(pid);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const p of liveChildren) {
      try {
        process.kill(p, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  });
}

function otaUrlFor(wsUrl: string): string {
  const u = new URL(wsUrl);
  u.protocol = u.protocol === 'wss:' ? 'https:' : 'http:';
  u.pathname = '/xiaozhi/ota/';
  u.search = '';
  return u.toString();
}

/** /metrics of one server, remembering the worst event-loop lag seen since the last reset. */
function scraper(httpUrl: string): Pick<SimServer, 'metrics' | 'lagSinceReset' | 'resetLag'> {
  let lag: { p99S: number; maxS: number } | null = null;
  return {
    metrics: async () => {
      const m = await scrape(httpUrl);
      if (m?.lagP99S !== undefined && m.lagMaxS !== undefined) {
        lag = { p99S: Math.max(lag?.p99S ?? 0, m.lagP99S), maxS: Math.max(lag?.maxS ?? 0, m.lagMaxS) };
      }
      return m;
    },
    lagSinceReset: () => lag,
    resetLag: () => {
      lag = null;
    },
  };
}

async function scrape(httpUrl: string): Promise<MetricsSnapshot | null> {
  try {
    const res = await fetch(`${httpUrl}/metrics`, { signal: AbortSignal.timeout(3000) });
    if (!res.ok) return null;
    const m = parsePrometheus(await res.text());
    const get = (k: string): number | undefined => m.get(k);
    const snap: MetricsSnapshot = {};
    const set = (key: Exclude<keyof MetricsSnapshot, 'nodeVersion'>, v: number | undefined): void => {
      if (v !== undefined) snap[key] = v;
    };
    set('cpuS', get('process_cpu_seconds_total'));
    set('rssBytes', get('process_resident_memory_bytes'));
    set('sessionsActive', get('xiaozhi_sessions_active'));
    set('lagP99S', get('nodejs_eventloop_lag_p99_seconds'));
    set('lagMaxS', get('nodejs_eventloop_lag_max_seconds'));
    set('heapUsedBytes', get('nodejs_heap_size_used_bytes'));
    set('heapTotalBytes', get('nodejs_heap_size_total_bytes'));
    set('externalBytes', get('nodejs_external_memory_bytes'));
    set('newSpaceBytes', get('nodejs_heap_space_size_total_bytes{space="new"}'));
    for (const key of m.keys()) {
      const v = /^nodejs_version_info\{.*version="([^"]+)"/.exec(key);
      if (v) snap.nodeVersion = v[1] as string;
    }
    return snap;
  } catch {
    return null;
  }
}

/** A server someone else runs: probes through /metrics only. */
export function remoteServer(wsUrl: string, otaUrl?: string, vadSilenceMs?: number): SimServer {
  const u = new URL(wsUrl);
  const httpUrl = `${u.protocol === 'wss:' ? 'https:' : 'http:'}//${u.host}`;
  const probe = scraper(httpUrl);
  return {
    started: false,
    pid: null,
    httpUrl,
    wsUrl,
    otaUrl: otaUrl ?? otaUrlFor(wsUrl),
    vadSilenceMs: vadSilenceMs ?? null,
    timings: [],
    errors: [],
    exitedEarly: () => null,
    cpu: async () => {
      const m = await probe.metrics();
      return m?.cpuS === undefined ? null : { at: performance.now(), cpuS: m.cpuS, childCpuS: null };
    },
    rss: async () => {
      const m = await probe.metrics();
      return m?.rssBytes === undefined ? null : { rss: m.rssBytes, hwm: null };
    },
    processTree: () => null,
    fakesPid: null,
    fakeStats: async () => null,
    ...probe,
    stop: async () => {},
  };
}

export interface LocalServerOptions {
  /** What the fake ASR returns for every utterance. */
  transcript: string;
  /** What the fake LLM streams for every request. */
  answer: string;
  /** How slowly the fakes answer, and whether the server speaks through the fake TTS. */
  providers: ProviderLatency;
  /** Extra config, deep-merged over the simulator's (dotted keys from `--set`). */
  configOverrides: Record<string, unknown>;
  /** Extra environment for the child. */
  env: Record<string, string>;
  /** Extra node arguments for the child (before the script). */
  nodeArgs: string[];
  /** The node binary for the child; unset: this process's own. */
  nodeBinary?: string;
  /** File that receives the child's whole output. */
  logFile?: string;
  readyTimeoutMs: number;
  log: (line: string) => void;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function deepMerge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) {
    const b = out[k];
    out[k] = isObject(b) && isObject(v) ? deepMerge(b, v) : v;
  }
  return out;
}

/** Environment variables the server reads as overrides: never inherited, so nothing points away from loopback. */
const SERVER_ENV_OVERRIDES = [
  'HOST',
  'PORT',
  'PUBLIC_WS_URL',
  'OPENAI_BASE_URL',
  'OPENAI_API_KEY',
  'LLM_MODEL',
  'LOG_LEVEL',
  'XIAOZHI_CONFIG',
  'XIAOZHI_DATA_DIR',
  'DATABASE_URL',
  'ADMIN_TOKEN',
];

/** The fakes' URLs, as sim/fakes-main.ts prints them. */
export interface FakeUrls {
  llm: string;
  /** The batch fake's base URL, or the streaming stand-in's ws:// URL (`asrKind`). */
  asr: string;
  asrKind: 'openai' | 'funasr';
  /** The remote fake's base URL, or the streaming stand-in's ws:// URL (`ttsKind`); null when the server speaks with its embedded TTS. */
  tts: string | null;
  ttsKind: 'openai' | 'volcengine' | null;
  /** The realtime stand-in's base URL when the run's agent talks through a speech-to-speech model. */
  realtime?: string | null;
  stats: string;
}

export interface Fakes extends FakeUrls {
  proc: ChildProcess;
  exited: Promise<void>;
}

/** Starts sim/fakes-main.ts (fake LLM, ASR and maybe TTS) in its own process; it exits when our pipe to it closes. */
export async function startFakes(
  transcript: string,
  answer: string,
  timeoutMs: number,
  providers: ProviderLatency = PROFILES.instant,
): Promise<Fakes> {
  const script = fileURLToPath(new URL('./fakes-main.ts', import.meta.url));
  const proc = spawn(process.execPath, ['--import', 'tsx', script, JSON.stringify({ transcript, answer, providers })], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  if (proc.pid) guardChild(proc.pid);
  const exited = new Promise<void>((resolve) => {
    proc.once('exit', () => {
      if (proc.pid) liveChildren.delete(proc.pid);
      resolve();
    });
    proc.once('error', () => resolve());
  });
  let err = '';
  proc.stderr?.on('data', (b: Buffer) => {
    err = (err + b.toString('utf8')).slice(-4000);
  });
  try {
    const urls = await new Promise<FakeUrls>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`fakes did not start in ${timeoutMs} ms: ${err}`)), timeoutMs);
      proc.stdout?.on('data', (b: Buffer) => {
        out += b.toString('utf8');
        const nl = out.indexOf('\n');
        if (nl < 0) return;
        clearTimeout(timer);
        try {
          resolve(JSON.parse(out.slice(0, nl)) as FakeUrls);
        } catch (e) {
          reject(e instanceof Error ? e : new Error(String(e)));
        }
      });
      void exited.then(() => {
        clearTimeout(timer);
        reject(new Error(`fakes exited: ${err}`));
      });
    });
    for (const u of [urls.llm, urls.asr, urls.stats, ...(urls.tts ? [urls.tts] : [])]) {
      if (new URL(u).hostname !== '127.0.0.1') throw new Error(`fake not on loopback: ${u}`);
    }
    return { proc, ...urls, exited };
  } catch (e) {
    proc.kill('SIGKILL');
    throw e;
  }
}

export async function stopFakes(f: Fakes): Promise<void> {
  f.proc.stdin?.end();
  f.proc.kill('SIGTERM');
  await Promise.race([f.exited, sleep(3000)]);
  if (f.proc.exitCode === null && f.proc.signalCode === null) f.proc.kill('SIGKILL');
}

/**
 * The self-started server's config before `--set` overrides: loopback fakes for every provider it
 * uses, its data in the run's own folder `dir`.
 */
export function simServerConfig(fakes: FakeUrls, port: number, dir: string): Record<string, unknown> {
  return {
    // The simulated fleet comes from one loopback address and measures capacity itself.
    // The database in the run's own folder (a device record and a live session per connection).
    // A large idle fleet takes minutes to connect: the 120 s idle close would end the first
    // sessions before the last device arrives (19,500 took 6 min on 2 busy cores).
    server: {
      host: '127.0.0.1',
      port,
      dataDir: join(dir, 'data'),
      drainTimeoutMs: 1000,
      maxSessions: 0,
      maxSessionsPerIp: 0,
      idleTimeoutMs: 3_600_000,
      upgradeRate: { perSecond: 1_000_000, burst: 1_000_000 },
    },
    asr:
      fakes.asrKind === 'funasr'
        ? { provider: 'funasr', url: fakes.asr }
        : { provider: 'openai', baseURL: fakes.asr, apiKey: 'sk-sim', model: 'whisper-1', language: 'en' },
    // The remote fake answers OpenAI's pcm (24 kHz, the downlink's rate: nothing to resample);
    // the streaming stand-in takes the credentials it checks and answers pcm at 24 kHz by default.
    tts: !fakes.tts
      ? { provider: 'espeak', voice: 'en-us' }
      : fakes.ttsKind === 'volcengine'
        ? {
            provider: 'volcengine',
            url: fakes.tts,
            appKey: 'test-app-key',
            accessKey: 'test-access-key',
            resourceId: 'seed-tts-1.0',
          }
        : {
            provider: 'openai',
            baseURL: fakes.tts,
            apiKey: 'sk-sim',
            model: 'tts-1',
            voice: 'alloy',
            format: 'pcm',
            pcmSampleRate: 24_000,
          },
    llm: { baseURL: fakes.llm, apiKey: 'sk-sim', model: 'sim', maxRetries: 0 },
    // The default agent talks through the speech-to-speech stand-in (plain ws: on loopback).
    ...(fakes.realtime
      ? { pipeline: 'realtime', realtime: { provider: 'openai-realtime', baseURL: fakes.realtime, apiKey: 'sk-sim' } }
      : {}),
    logging: { level: 'info' },
  };
}

/** Starts the fakes and the real server as child processes; everything on 127.0.0.1. */
export async function startLocalServer(opts: LocalServerOptions): Promise<SimServer> {
  let fakes: Fakes | undefined;
  let child: SpawnedServer | undefined;
  const dir = mkdtempSync(join(tmpdir(), 'xz-sim-'));
  const cleanup = async (): Promise<void> => {
    if (child) {
      const c = child;
      child = undefined;
      if (c.proc.exitCode === null && c.proc.signalCode === null) {
        c.proc.kill('SIGTERM');
        await Promise.race([c.exited, sleep(4000)]);
      }
      await c.kill();
      if (c.proc.pid) liveChildren.delete(c.proc.pid);
    }
    if (fakes) await stopFakes(fakes);
    fakes = undefined;
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    fakes = await startFakes(opts.transcript, opts.answer, opts.readyTimeoutMs, opts.providers);
    const port = await freePort();
    const base = simServerConfig(fakes, port, dir);
    const config = deepMerge(base, opts.configOverrides);
    const file = join(dir, 'config.yaml');
    writeFileSync(file, stringify(config));
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const k of SERVER_ENV_OVERRIDES) delete env[k];
    Object.assign(env, opts.env);

    const timings: ServerTurnTiming[] = [];
    const errors: string[] = [];
    let vadSilenceMs: number | null = null;
    child = await spawnServer({
      command: opts.nodeBinary ?? process.execPath,
      // As `npm start` runs it (its node flags, Node's own type stripping), `--server-arg`s after its flags.
      args: serverCommandArgs(file, opts.nodeArgs),
      env,
      port,
      readyTimeoutMs: opts.readyTimeoutMs,
    });
    const spawned = child;
    const pid = spawned.proc.pid ?? null;
    if (pid) guardChild(pid);
    let exitNote: string | null = null;
    void spawned.exited.then((e) => {
      if (pid) liveChildren.delete(pid);
      exitNote = `server exited (code ${e.code}, signal ${e.signal}); output tail:\n${spawned.output().slice(-2000)}`;
    });
    // Line-by-line parse of the pino JSON log: only what the report needs is kept.
    let partial = '';
    const logFile = opts.logFile ? createWriteStream(opts.logFile) : null;
    if (logFile) {
      logFile.on('error', (e) => opts.log(`server log ${opts.logFile}: ${e.message}`));
      spawned.proc.stderr?.pipe(logFile, { end: false });
      // 'close' comes after the child's output streams have ended ('exit' may come before the
      // last of its output is read), so nothing is written after the end.
      spawned.proc.once('close', () => logFile.end());
    }
    spawned.proc.stdout?.on('data', (b: Buffer) => {
      logFile?.write(b);
      const text = partial + b.toString('utf8');
      const lines = text.split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        if (!line.startsWith('{')) continue;
        let j: Record<string, unknown>;
        try {
          j = JSON.parse(line) as Record<string, unknown>;
        } catch {
          continue;
        }
        if (j.msg === 'turn timings') {
          const num = (k: string): number | undefined => (typeof j[k] === 'number' ? (j[k] as number) : undefined);
          const t: ServerTurnTiming = {
            deviceId: String(j.deviceId ?? ''),
            sessionId: String(j.sessionId ?? ''),
            // As the server logged them: its own values of the type.
            source: String(j.source ?? '') as TurnTimings['source'],
            outcome: String(j.outcome ?? '') as TurnTimings['outcome'],
            totalMs: num('totalMs') ?? NaN,
            lateFrames: num('lateFrames') ?? 0,
            frameIntervals: num('frameIntervals') ?? 0,
            lateIntervals: num('lateIntervals') ?? 0,
          };
          for (const k of [
            'asrMs',
            'llmFirstTokenMs',
            'firstSentenceMs',
            'firstAudioMs',
            'earlyStartMs',
            'endOfTurnMs',
            'firstTokenMs',
            'ttsFirstAudioMs',
          ] as const) {
            const v = num(k);
            if (v !== undefined) t[k] = v;
          }
          const time = num('time');
          if (time !== undefined && Number.isFinite(t.totalMs)) t.endedAt = time - t.totalMs - performance.timeOrigin;
          timings.push(t);
        } else if (typeof j.level === 'number' && j.level >= 50) {
          errors.push(String(j.msg ?? line.slice(0, 200)));
          if (errors.length > 50) errors.shift();
        }
      }
    });
    // The effective VAD window: the config the simulator wrote (the schema's default unless overridden).
    const vad = config.vad;
    vadSilenceMs = isObject(vad) && typeof vad.minSilenceMs === 'number' ? vad.minSilenceMs : 700;
    const httpUrl = spawned.httpUrl;
    const probe = scraper(httpUrl);
    const statsUrl = fakes.stats;
    return {
      started: true,
      pid,
      httpUrl,
      wsUrl: spawned.wsUrl,
      otaUrl: `${httpUrl}/xiaozhi/ota/`,
      vadSilenceMs,
      timings,
      errors,
      exitedEarly: () => exitNote,
      cpu: async () => {
        const c = pid ? procCpu(pid) : null;
        return c ? { at: performance.now(), cpuS: c.self, childCpuS: c.children } : null;
      },
      rss: async () => (pid ? procRss(pid) : null),
      processTree: () => (pid ? { pid, children: childPids(pid) } : null),
      fakesPid: fakes.proc.pid ?? null,
      fakeStats: async () => {
        try {
          const res = await fetch(statsUrl, { signal: AbortSignal.timeout(3000) });
          return res.ok ? ((await res.json()) as FakeStats) : null;
        } catch {
          return null;
        }
      },
      ...probe,
      stop: cleanup,
    };
  } catch (err) {
    await cleanup();
    throw err;
  }
}
