/**
 * @module How busy the machine was in a window of a step: samples `/proc/stat` (all CPUs) and the
 * CPU ticks of the server's threads and helper processes every few ms, so that the report can say
 * whether the CPUs were saturated from a burst's first end of speech until most devices had their
 * first frame, and which of the server's threads used them. A burst that waits on a full machine
 * needs less work per turn or more cores; one that waits on an idle machine has a queue to find.
 *
 * The server's threads are told apart by the names they give themselves (`core/thread-name.ts`):
 * the main thread (the process's own id), `xz-providers`, `xz-media-<n>`; the rest of the process
 * (V8's and libuv's helpers) is `other`. The simulator's own process and the fakes' are sampled too,
 * so a saturated window shows who took the rest. Linux only (`startCpuSampler` returns null elsewhere).
 * About 400 small reads a second, far below what the step itself costs.
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
import { readdirSync, readFileSync } from 'node:fs';

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
}

export interface CpuSampler {
  /** CPU use between two performance.now() times; null when the samples do not cover them. */
  window(from: number, to: number): CpuWindow | null;
  stop(): void;
}

type Group = 'process' | 'main' | 'providers' | 'media' | 'helpers' | 'simulator' | 'fakes';
const GROUPS: readonly Group[] = ['process', 'main', 'providers', 'media', 'helpers', 'simulator', 'fakes'];

interface Sample {
  /** performance.now() of the sample. */
  at: number;
  /** Jiffies of all CPUs: busy (not idle or iowait), stolen by the hypervisor, and total. */
  busy: number;
  steal: number;
  total: number;
  /** utime+stime of each group, in the same jiffies. */
  ticks: Record<Group, number>;
  /** Run-queue wait so far (ns) of the server's and this process's main threads. */
  waitNs: { serverMain: number | null; simulator: number | null };
}

/** Run-queue wait (ns) from a schedstat file: its second field. Null when unreadable. */
function readWaitNs(path: string | null): number | null {
  if (!path) return null;
  try {
    const v = Number(readFileSync(path, 'utf8').split(' ')[1]);
    return Number.isFinite(v) ? v : null;
  } catch {
    return null;
  }
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

function readMachine(): { busy: number; steal: number; total: number } | null {
  try {
    return parseCpuLine(readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '');
  } catch {
    return null;
  }
}

/** utime+stime of a /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat file; 0 once it is gone. */
function readTicks(statPath: string): number {
  try {
    const s = readFileSync(statPath, 'utf8');
    const rest = s.slice(s.lastIndexOf(')') + 2).split(' ');
    // utime is field 14, stime 15 (rest[0] is field 3).
    return Number(rest[11] ?? 0) + Number(rest[12] ?? 0);
  } catch {
    return 0;
  }
}

/** The stat files of each group, found once: a thread started later counts under `other`. */
function groupFiles(server: ServerProcesses | null, fakesPid: number | null): Record<Group, string[]> {
  const files: Record<Group, string[]> = { process: [], main: [], providers: [], media: [], helpers: [], simulator: ['/proc/self/stat'], fakes: fakesPid ? [`/proc/${fakesPid}/stat`] : [] };
  if (!server) return files;
  const { pid, children } = server;
  files.process.push(`/proc/${pid}/stat`);
  files.main.push(`/proc/${pid}/task/${pid}/stat`);
  files.helpers.push(...children.map((c) => `/proc/${c}/stat`));
  let tids: string[] = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    // the server is gone: only its totals (zero) remain
  }
  for (const tid of tids) {
    let name = '';
    try {
      name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
    } catch {
      continue;
    }
    if (name === 'xz-providers') files.providers.push(`/proc/${pid}/task/${tid}/stat`);
    else if (name.startsWith('xz-media-')) files.media.push(`/proc/${pid}/task/${tid}/stat`);
  }
  return files;
}

/** The server process and its helper processes. */
export interface ServerProcesses {
  pid: number;
  children: readonly number[];
}

/**
 * Starts sampling every `everyMs`; `server` is the process whose threads are accounted, if any,
 * and `fakesPid` the fakes' process. This process is always accounted, as the simulator.
 */
export function startCpuSampler(everyMs: number, server: ServerProcesses | null, fakesPid: number | null = null): CpuSampler | null {
  if (!readMachine()) return null;
  const files = groupFiles(server, fakesPid);
  const serverMainWait = server ? `/proc/${server.pid}/task/${server.pid}/schedstat` : null;
  const simulatorWait = `/proc/self/task/${process.pid}/schedstat`;
  const samples: Sample[] = [];
  const take = (): void => {
    const m = readMachine();
    if (!m) return;
    const ticks: Record<Group, number> = { process: 0, main: 0, providers: 0, media: 0, helpers: 0, simulator: 0, fakes: 0 };
    for (const g of GROUPS) for (const f of files[g]) ticks[g] += readTicks(f);
    samples.push({ at: performance.now(), busy: m.busy, steal: m.steal, total: m.total, ticks, waitNs: { serverMain: readWaitNs(serverMainWait), simulator: readWaitNs(simulatorWait) } });
  };
  take();
  const timer = setInterval(take, everyMs);
  return {
    window(from: number, to: number): CpuWindow | null {
      if (!(to > from)) return null;
      // The last sample at or before `from`, and the first at or after `to`.
      let a: Sample | undefined;
      let b: Sample | undefined;
      for (const s of samples) {
        if (s.at <= from) a = s;
        if (s.at >= to && !b) b = s;
      }
      if (!a || !b || b.total <= a.total) return null;
      const total = b.total - a.total;
      const pct = (g: Group): number => (100 * Math.max(0, b.ticks[g] - a.ticks[g])) / total;
      const share = (): ServerCpuShare => {
        const [proc, main, providers, media, helpers] = [pct('process'), pct('main'), pct('providers'), pct('media'), pct('helpers')];
        // The process's and its threads' files are read a moment apart, so the named threads can
        // add up to a tick more than the process: the process then counts as their sum.
        const named = main + providers + media;
        const other = Math.max(0, proc - named);
        return { total: named + other + helpers, main, providers, media, other, helpers };
      };
      const rig: RigCpuShare = { simulator: pct('simulator'), fakes: fakesPid ? pct('fakes') : null };
      const waited = (k: keyof CpuWait): number | null => {
        const [x, y] = [a.waitNs[k], b.waitNs[k]];
        return x === null || y === null ? null : Math.max(0, y - x) / 1e6;
      };
      const cpuWaitMs: CpuWait = { serverMain: waited('serverMain'), simulator: waited('simulator') };
      return { ms: to - from, machineBusyPct: (100 * (b.busy - a.busy)) / total, stealPct: (100 * (b.steal - a.steal)) / total, server: server ? share() : null, rig, cpuWaitMs };
    },
    stop(): void {
      clearInterval(timer);
      take();
    },
  };
}
