/**
 * @module What the simulator reads from Linux's /proc about the processes it measures: CPU time
 * and memory of a process and its live children. `ProcFiles` keeps files open for a sampler that
 * reads the same dozen files fifty times a second: one pread from offset 0 returns the current
 * content, where `readFileSync` opens, stats, reads and closes each time (about 4× the cost).
 */
import { closeSync, openSync, readdirSync, readFileSync, readSync } from 'node:fs';
import { execFileSync } from 'node:child_process';

/**
 * Files under /proc kept open and read again from the start on each `read`. A file that could not
 * be opened or read (its process or thread ended) is not tried again: a sampler asks for it fifty
 * times a second, and a later process given the same pid is not the one it was asked about.
 */
export class ProcFiles {
  readonly #fds = new Map<string, number>();
  readonly #gone = new Set<string>();
  // /proc/<pid>/stat and status are under 2 KB; only the first line of /proc/stat is used.
  readonly #buf = Buffer.alloc(8192);

  /** The file's current content; null when it cannot be read (e.g. its process ended). */
  read(path: string): string | null {
    if (this.#gone.has(path)) return null;
    let fd = this.#fds.get(path);
    if (fd === undefined) {
      try {
        fd = openSync(path, 'r');
      } catch {
        this.#gone.add(path);
        return null;
      }
      this.#fds.set(path, fd);
    }
    try {
      const n = readSync(fd, this.#buf, 0, this.#buf.length, 0);
      return this.#buf.toString('latin1', 0, n);
    } catch {
      // The process is gone (ESRCH).
      this.#forget(path, fd);
      this.#gone.add(path);
      return null;
    }
  }

  close(): void {
    for (const [path, fd] of this.#fds) this.#forget(path, fd);
  }

  #forget(path: string, fd: number): void {
    this.#fds.delete(path);
    try {
      closeSync(fd);
    } catch {
      // already closed
    }
  }
}

/** The fields of a /proc/<pid>/stat line after the command name (which may hold spaces): [0] is field 3, the state. */
export function statFieldsOf(text: string): string[] {
  return text.slice(text.lastIndexOf(')') + 2).split(' ');
}

let clkTck: number | null = null;
function clockTicks(): number {
  if (clkTck === null) {
    try {
      clkTck = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clkTck = 100;
    }
  }
  return clkTck;
}

/** How long a list of children is reused: a scan reads every /proc/<n>/stat of the machine. */
const CHILD_LIST_TTL_MS = 1000;
const childCache = new Map<number, { at: number; pids: number[] }>();

/**
 * Pids of the live direct children of `pid` (the espeak-ng helpers, pocketsphinx, ffmpeg), from
 * /proc. Reused for a second: the RSS sampler asks ten times a second, and the scan was the
 * largest single item of the simulator's own CPU profile (the children are long-lived; a replaced
 * helper shows up a second later).
 */
export function childPids(pid: number): number[] {
  const cached = childCache.get(pid);
  if (cached && performance.now() - cached.at < CHILD_LIST_TTL_MS) return cached.pids;
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (Number(statFieldsOf(readFileSync(`/proc/${name}/stat`, 'utf8'))[1]) === pid) out.push(Number(name));
    } catch {
      // ended while we looked
    }
  }
  childCache.set(pid, { at: performance.now(), pids: out });
  return out;
}

/** Fields of /proc/<pid>/stat after the command name: rest[0] is field 3 (state). */
function statFields(pid: number): string[] | null {
  try {
    return statFieldsOf(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return null;
  }
}

/**
 * CPU seconds of a process (utime+stime) and of its children: the reaped ones (cutime+cstime)
 * plus the live ones (the long-lived espeak-ng helpers and pocketsphinx work all run long).
 */
export function procCpu(pid: number): { self: number; children: number } | null {
  const rest = statFields(pid);
  if (!rest) return null;
  const tck = clockTicks();
  // utime is field 14, stime 15, cutime 16, cstime 17.
  const n = (f: string[], i: number): number => Number(f[i] ?? 0);
  let children = n(rest, 13) + n(rest, 14);
  for (const c of childPids(pid)) {
    const f = statFields(c);
    if (f) children += n(f, 11) + n(f, 12) + n(f, 13) + n(f, 14);
  }
  return { self: (n(rest, 11) + n(rest, 12)) / tck, children: children / tck };
}

function readText(path: string, files?: ProcFiles): string | null {
  if (files) return files.read(path);
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}

/**
 * VmRSS and VmHWM of a process in bytes, from /proc/<pid>/status; `rss` includes its live
 * children's. With `files`, the status files stay open between calls.
 */
export function procRss(pid: number, files?: ProcFiles): { rss: number; hwm: number } | null {
  const read = (p: number): { rss: number; hwm: number } | null => {
    const text = readText(`/proc/${p}/status`, files);
    if (text === null) return null;
    const kb = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? NaN) * 1024;
    return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
  };
  const own = read(pid);
  if (!own) return null;
  let kids = 0;
  for (const c of childPids(pid)) kids += read(c)?.rss ?? 0;
  return { rss: own.rss + kids, hwm: own.hwm + kids };
}
