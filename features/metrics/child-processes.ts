/**
 * @module Counts the descendants of a process by program name, from Linux /proc (no `ps` spawn, so
 * a scrape never adds a child of its own). Used for the `running child processes` gauge: a count
 * that keeps growing means ffmpeg, espeak-ng or pocketsphinx processes are leaking.
 */
import { readdir, readFile } from 'node:fs/promises';
import { basename } from 'node:path';

export interface ChildProcessScanOptions {
  /** Root process whose descendants are counted (default: this process). */
  pid?: number;
  /** Where procfs is mounted (tests may point elsewhere). Default `/proc`. */
  procRoot?: string;
}

/** One process found under /proc. */
export interface ProcEntry {
  pid: number;
  ppid: number;
  /** Program name (argv[0]'s base name). */
  name: string;
  /** The command line, arguments joined by spaces. */
  args: string;
}

/** Parses `/proc/PID/stat`: the name sits in parentheses and may itself hold spaces or `)`. */
function parseStat(text: string): { ppid: number; comm: string } | null {
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) return null;
  const rest = text.slice(close + 2).split(' ');
  const ppid = Number(rest[1]);
  return Number.isInteger(ppid) ? { ppid, comm: text.slice(open + 1, close) } : null;
}

/** Program name: argv[0]'s base name (comm is cut at 15 characters: `pocketsphinx_co`). */
function programName(cmdline: string, comm: string): string {
  const argv0 = cmdline.split('\0')[0] ?? '';
  const name = argv0 ? basename(argv0) : comm;
  // Label values stay short and printable whatever a child put in its argv.
  return name.replace(/[^\w.+-]/g, '_').slice(0, 40) || 'unknown';
}

async function readEntry(procRoot: string, pid: number): Promise<ProcEntry | null> {
  try {
    const stat = parseStat(await readFile(`${procRoot}/${pid}/stat`, 'utf8'));
    if (!stat) return null;
    const cmdline = await readFile(`${procRoot}/${pid}/cmdline`, 'utf8').catch(() => '');
    return {
      pid,
      ppid: stat.ppid,
      name: programName(cmdline, stat.comm),
      args: cmdline.split('\0').filter(Boolean).join(' '),
    };
  } catch {
    // The process ended between the listing and the read: it is simply not counted.
    return null;
  }
}

/**
 * Descendants (children, grandchildren, ...) of a process, parents before their children. Empty
 * where /proc does not exist (macOS, Windows).
 */
export async function listDescendants(opts: ChildProcessScanOptions = {}): Promise<ProcEntry[]> {
  const root = opts.pid ?? process.pid;
  const procRoot = opts.procRoot ?? '/proc';
  let names: string[];
  try {
    names = await readdir(procRoot);
  } catch {
    return [];
  }
  const pids = names.filter((n) => /^\d+$/.test(n)).map(Number);
  const entries = (await Promise.all(pids.map((p) => readEntry(procRoot, p)))).filter(
    (e): e is ProcEntry => e !== null,
  );
  const byParent = new Map<number, ProcEntry[]>();
  for (const e of entries) byParent.set(e.ppid, [...(byParent.get(e.ppid) ?? []), e]);
  const out: ProcEntry[] = [];
  const seen = new Set<number>([root]);
  const queue = [root];
  while (queue.length > 0) {
    const parent = queue.shift() as number;
    for (const child of byParent.get(parent) ?? []) {
      if (seen.has(child.pid)) continue;
      seen.add(child.pid);
      out.push(child);
      queue.push(child.pid);
    }
  }
  return out;
}

/** Descendants of a process counted by program name (the gauge reports nothing without /proc). */
export async function countChildProcesses(opts: ChildProcessScanOptions = {}): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const e of await listDescendants(opts)) counts.set(e.name, (counts.get(e.name) ?? 0) + 1);
  return counts;
}
