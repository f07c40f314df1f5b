/**
 * @module How busy the machine was in a window of a step: a probe thread samples `/proc/stat` (all
 * CPUs) and the CPU ticks of the server's threads and helper processes every few ms, so that the
 * report can say whether the CPUs were saturated from a burst's first end of speech until most
 * devices had their first frame, and which of the server's threads used them. A burst that waits
 * on a full machine needs less work per turn or more cores; one that waits on an idle machine has
 * a queue to find. The same thread samples the server's memory (RSS) for the step's peak.
 *
 * The server's threads are told apart by the names they give themselves (`core/thread-name.ts`):
 * the main thread (the process's own id), `xz-providers`, `xz-media-<n>`; the rest of the process
 * (V8's and libuv's helpers) is `other`. The simulator's own process and the fakes' are sampled too,
 * so a saturated window shows who took the rest. Linux only (`startMachineProbe` returns null elsewhere).
 *
 * Why a thread of its own (`probe-worker.ts`): the simulated devices take their arrival times on
 * this process's main thread, and the sampling was the second largest item of that thread's CPU
 * profile (a dozen /proc reads fifty times a second). The probe
 * thread also notes how late its own timer fires (`TimerJitter`): a thread that does almost
 * nothing, asking for a CPU at set moments as the server's pacer does.
 *
 * On a virtual machine the hypervisor may run other guests on this one's CPUs: that time is
 * `steal` in `/proc/stat`, counted apart (`stealPct`): none of this machine's threads used it, and
 * the thread put on that vCPU waited without the guest knowing.
 *
 * It also reads how long the server's main thread and this process's main thread (the simulated
 * devices) were ready to run but waited for a CPU (`/proc/<pid>/task/<tid>/schedstat`, in ns): the
 * main thread sends every device's frames on time only if it gets a CPU when a frame is due, and a
 * device's arrival times are taken on this process's main thread.
 */
import { existsSync } from 'node:fs';
import { startModuleWorker } from '../../../core/start-worker.ts';

/** What the server used of all CPUs' time in a window, in %. */
export interface ServerCpuShare {
  /** The whole process (every thread) plus its helper processes. */
  total: number;
  main: number;
  providers: number;
  /** All media worker threads together. */
  media: number;
  /** The process's other threads: V8's garbage collector and compiler, libuv's pool. */
  other: number;
  /** Child processes: the espeak-ng helpers, pocketsphinx. */
  helpers: number;
}

/** What the measuring side used of all CPUs' time in the same window, in %. */
export interface RigCpuShare {
  /** This process: the simulated devices. */
  simulator: number;
  /** The fake LLM and ASR's process; null when it is not ours. */
  fakes: number | null;
}

/** Time (ms) a thread was ready to run but waited for a CPU, in a window; null where unreadable. */
export interface CpuWait {
  serverMain: number | null;
  simulator: number | null;
}

export interface CpuWindow {
  /** The window's length, ms. */
  ms: number;
  /** Share of all CPUs' time that was busy, %, including `stealPct`. */
  machineBusyPct: number;
  /** Share of all CPUs' time the hypervisor gave to other guests (`steal`), %: 0 on bare metal. */
  stealPct: number;
  /** Null when no server process was given. */
  server: ServerCpuShare | null;
  rig: RigCpuShare;
  cpuWaitMs: CpuWait;
  /** How the probe thread's own timer kept time in the window; null when no tick fell in it. */
  timer: TimerJitter | null;
}

/**
 * The probe thread's timer in a window: how many of its ticks fired over LATE_TICK_MS after their
 * instant. The thread is nearly idle, so this is what the machine (its load, and on a VM the host)
 * did to a thread that wanted a CPU at a given moment: a floor under the pacer's late sends, which
 * are late intervals from 5 ms on.
 */
export interface TimerJitter {
  ticks: number;
  late: number;
  maxLateMs: number;
}

/** A timer that fires this much after its instant is late: as a 60 ms frame sent over 65 ms after the last. */
export const LATE_TICK_MS = 5;

/** The server's RSS over the probe's life: the highest sample, and VmHWM at the end (bytes). */
export interface RssPeak {
  peak: number | null;
  hwm: number | null;
}

export interface MachineProbe {
  /**
   * CPU use between two performance.now() times; null when the samples do not cover them, and
   * until `stop()` has returned (the samples live on the probe's thread until then).
   */
  window(from: number, to: number): CpuWindow | null;
  /** The server's RSS peak; null without an `rssEveryMs`, and until `stop()` has returned. */
  rss(): RssPeak | null;
  /** Takes a last sample, fetches the samples and ends the probe's thread. Never rejects. */
  stop(): Promise<void>;
}

export type Group = 'process' | 'main' | 'providers' | 'media' | 'helpers' | 'simulator' | 'fakes';
export const GROUPS: readonly Group[] = ['process', 'main', 'providers', 'media', 'helpers', 'simulator', 'fakes'];

/** One sample of the probe thread. */
export interface Sample {
  /** performance.now() of the sample, on the simulator's main-thread clock. */
  at: number;
  /** How late the probe's timer fired for this sample, ms; null for samples not taken by it. */
  tickLateMs: number | null;
  /** Jiffies of all CPUs: busy (not idle or iowait), stolen by the hypervisor, and total. */
  busy: number;
  steal: number;
  total: number;
  /** utime+stime of each group, in the same jiffies. */
  ticks: Record<Group, number>;
  /** Run-queue wait so far (ns) of the server's and this process's main threads. */
  waitNs: { serverMain: number | null; simulator: number | null };
}

/** What the probe thread is started with (`workerData`). */
export interface ProbeSetup {
  everyMs: number;
  /** Sample the server's RSS this often; null: not at all. */
  rssEveryMs: number | null;
  server: ServerProcesses | null;
  fakesPid: number | null;
  /** The simulator's process id (its main thread's id too). */
  simPid: number;
  /** performance.timeOrigin of the simulator's main thread: samples are timed on its clock. */
  origin: number;
}

/** What the probe thread posts: `ready` once it has its first sample, `done` in answer to `stop`. */
export type ProbeMessage = { type: 'ready' } | { type: 'done'; samples: Sample[]; rss: RssPeak | null };

/** The server process and its helper processes. */
export interface ServerProcesses {
  pid: number;
  children: readonly number[];
}

/** Busy, stolen and total jiffies of all CPUs from the first line of `/proc/stat`; null if unreadable. */
export function parseCpuLine(line: string): { busy: number; steal: number; total: number } | null {
  // Fields after "cpu": user nice system idle iowait irq softirq steal guest guest_nice. A guest's
  // time is already counted in user and nice, so the sum stops at steal.
  const f = line.trim().split(/\s+/).slice(1, 9).map(Number);
  if (f.length < 8 || !f.every(Number.isFinite)) return null;
  const total = f.reduce((x, y) => x + y, 0);
  const idle = (f[3] ?? 0) + (f[4] ?? 0);
  return total > 0 ? { busy: total - idle, steal: f[7] ?? 0, total } : null;
}

/** CPU use between two times from a probe's samples; null when the samples do not cover them. */
export function cpuWindowOf(
  samples: readonly Sample[],
  from: number,
  to: number,
  hasServer: boolean,
  hasFakes: boolean,
): CpuWindow | null {
  if (!(to > from)) return null;
  // The last sample at or before `from`, and the first at or after `to`.
  let a: Sample | undefined;
  let b: Sample | undefined;
  for (const s of samples) {
    if (s.at <= from) a = s;
    if (s.at >= to && !b) b = s;
  }
  if (!a || !b || b.total <= a.total) return null;
  const [sa, sb] = [a, b];
  const total = sb.total - sa.total;
  const pct = (g: Group): number => (100 * Math.max(0, sb.ticks[g] - sa.ticks[g])) / total;
  const share = (): ServerCpuShare => {
    const [proc, main, providers, media, helpers] = [
      pct('process'),
      pct('main'),
      pct('providers'),
      pct('media'),
      pct('helpers'),
    ];
    // The process's and its threads' files are read a moment apart, so the named threads can
    // add up to a tick more than the process: the process then counts as their sum.
    const named = main + providers + media;
    const other = Math.max(0, proc - named);
    return { total: named + other + helpers, main, providers, media, other, helpers };
  };
  const rig: RigCpuShare = { simulator: pct('simulator'), fakes: hasFakes ? pct('fakes') : null };
  const waited = (k: keyof CpuWait): number | null => {
    const [x, y] = [sa.waitNs[k], sb.waitNs[k]];
    return x === null || y === null ? null : Math.max(0, y - x) / 1e6;
  };
  const cpuWaitMs: CpuWait = { serverMain: waited('serverMain'), simulator: waited('simulator') };
  return {
    ms: to - from,
    machineBusyPct: (100 * (sb.busy - sa.busy)) / total,
    stealPct: (100 * (sb.steal - sa.steal)) / total,
    server: hasServer ? share() : null,
    rig,
    cpuWaitMs,
    timer: timerJitter(samples, from, to),
  };
}

/** The probe's timer ticks that fired between `from` and `to`. */
export function timerJitter(samples: readonly Sample[], from: number, to: number): TimerJitter | null {
  let ticks = 0;
  let late = 0;
  let maxLateMs = 0;
  for (const s of samples) {
    if (s.tickLateMs === null || s.at < from || s.at > to) continue;
    ticks++;
    if (s.tickLateMs > LATE_TICK_MS) late++;
    maxLateMs = Math.max(maxLateMs, s.tickLateMs);
  }
  return ticks > 0 ? { ticks, late, maxLateMs } : null;
}

/** How long `stop()` waits for the probe thread's samples before it gives up on them. */
const STOP_TIMEOUT_MS = 5000;
/** How long the probe thread may take to start (it loads tsx when run from sources). */
const START_TIMEOUT_MS = 20_000;

/**
 * Starts a probe thread that samples every `everyMs` (and the server's RSS every `rssEveryMs`);
 * `server` is the process whose threads are accounted, if any, and `fakesPid` the fakes' process.
 * This process is always accounted, as the simulator. Null where /proc/stat is missing (not
 * Linux) or the thread does not start.
 */
export async function startMachineProbe(opts: {
  everyMs: number;
  rssEveryMs?: number | null;
  server: ServerProcesses | null;
  fakesPid?: number | null;
}): Promise<MachineProbe | null> {
  if (!existsSync('/proc/stat')) return null;
  const setup: ProbeSetup = {
    everyMs: opts.everyMs,
    rssEveryMs: opts.rssEveryMs ?? null,
    server: opts.server,
    fakesPid: opts.fakesPid ?? null,
    simPid: process.pid,
    origin: performance.timeOrigin,
  };
  const worker = startModuleWorker(import.meta.url, './probe-worker', { workerData: setup });
  // The probe must never keep the simulator alive, whatever happens to a run, nor bring it down:
  // a probe that failed leaves its windows empty (null figures), not an unhandled 'error'.
  worker.unref();
  worker.on('error', () => {});
  const next = (timeoutMs: number): Promise<ProbeMessage | null> =>
    new Promise((resolve) => {
      const timer = setTimeout(() => done(null), timeoutMs);
      const onMessage = (m: ProbeMessage): void => done(m);
      const onEnd = (): void => done(null);
      function done(m: ProbeMessage | null): void {
        clearTimeout(timer);
        worker.off('message', onMessage);
        worker.off('error', onEnd);
        worker.off('exit', onEnd);
        resolve(m);
      }
      worker.on('message', onMessage);
      worker.once('error', onEnd);
      worker.once('exit', onEnd);
    });
  const ready = await next(START_TIMEOUT_MS);
  if (ready?.type !== 'ready') {
    await worker.terminate();
    return null;
  }
  let samples: Sample[] = [];
  let rss: RssPeak | null = null;
  let stopped: Promise<void> | undefined;
  return {
    window: (from, to) => cpuWindowOf(samples, from, to, opts.server !== null, setup.fakesPid !== null),
    rss: () => rss,
    stop(): Promise<void> {
      stopped ??= (async () => {
        const answer = next(STOP_TIMEOUT_MS);
        worker.postMessage('stop');
        const m = await answer;
        if (m?.type === 'done') {
          samples = m.samples;
          rss = m.rss;
        }
        await worker.terminate();
      })();
      return stopped;
    },
  };
}
