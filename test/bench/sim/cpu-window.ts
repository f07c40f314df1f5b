/**
 * @module How busy the machine was in a window of a step: samples `/proc/stat` (all CPUs) and the
 * CPU ticks of a few processes (the server and its helpers) every few ms, so that the report can
 * say whether the CPUs were saturated from the first end of speech of a burst until most devices
 * had their first frame. A burst that waits on a full machine needs less work per turn or more
 * cores; one that waits on an idle machine has a queue to find.
 *
 * Linux only (`start` returns null elsewhere). One read of /proc/stat and one per process per
 * sample: about 150 small reads a second, far below what the step itself costs.
 */
import { readFileSync } from 'node:fs';

interface Sample {
  /** performance.now() of the sample. */
  at: number;
  /** Jiffies of all CPUs: busy (not idle or iowait) and total. */
  busy: number;
  total: number;
  /** utime+stime of the watched processes, in the same jiffies. */
  procs: number;
}

export interface CpuWindow {
  /** The window's length, ms. */
  ms: number;
  /** Share of all CPUs' time that was busy, %. */
  machineBusyPct: number;
  /** Share of all CPUs' time used by the watched processes, %. */
  watchedPct: number;
}

export interface CpuSampler {
  /** CPU use between two performance.now() times; null when the samples do not cover them. */
  window(from: number, to: number): CpuWindow | null;
  stop(): void;
}

function readMachine(): { busy: number; total: number } | null {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
    const f = line.trim().split(/\s+/).slice(1).map(Number);
    const total = f.reduce((a, b) => a + b, 0);
    // Fields: user nice system idle iowait irq softirq steal ...
    const idle = (f[3] ?? 0) + (f[4] ?? 0);
    return Number.isFinite(total) && total > 0 ? { busy: total - idle, total } : null;
  } catch {
    return null;
  }
}

function readProcTicks(pid: number): number {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = s.slice(s.lastIndexOf(')') + 2).split(' ');
    // utime is field 14, stime 15 (rest[0] is field 3).
    return Number(rest[11] ?? 0) + Number(rest[12] ?? 0);
  } catch {
    return 0; // ended: its ticks drop out of later samples (a helper replaced mid-window skews little)
  }
}

/** Starts sampling every `everyMs`; `pids` are the processes to account (read once). */
export function startCpuSampler(everyMs: number, pids: readonly number[]): CpuSampler | null {
  if (!readMachine()) return null;
  const samples: Sample[] = [];
  const take = (): void => {
    const m = readMachine();
    if (!m) return;
    let procs = 0;
    for (const p of pids) procs += readProcTicks(p);
    samples.push({ at: performance.now(), busy: m.busy, total: m.total, procs });
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
      return {
        ms: to - from,
        machineBusyPct: (100 * (b.busy - a.busy)) / total,
        watchedPct: (100 * Math.max(0, b.procs - a.procs)) / total,
      };
    },
    stop(): void {
      clearInterval(timer);
      take();
    },
  };
}
