/**
 * @module The simulator's probe thread (started by `startMachineProbe` in `cpu-window.ts`): samples
 * /proc every few ms into memory and hands the samples over when told to stop. It runs apart from
 * the simulated devices so that its reads never hold up the thread that times their frames, and it
 * keeps every file open between samples (`ProcFiles`).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { readdirSync } from 'node:fs';
import { ProcFiles, procRss, statFieldsOf } from './proc.ts';
import {
  GROUPS,
  parseCpuLine,
  type Group,
  type ProbeMessage,
  type ProbeSetup,
  type RssPeak,
  type Sample,
  type ServerProcesses,
} from './cpu-window.ts';

const setup = workerData as ProbeSetup;
const files = new ProcFiles();

/** utime+stime of a /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat file; 0 once it is gone. */
function readTicks(statPath: string): number {
  const s = files.read(statPath);
  if (s === null) return 0;
  const rest = statFieldsOf(s);
  // utime is field 14, stime 15 (rest[0] is field 3).
  return Number(rest[11] ?? 0) + Number(rest[12] ?? 0);
}

/** Run-queue wait (ns) from a schedstat file: its second field. Null when unreadable. */
function readWaitNs(path: string | null): number | null {
  if (!path) return null;
  const v = Number(files.read(path)?.split(' ')[1]);
  return Number.isFinite(v) ? v : null;
}

/** The stat files of each group, found once: a thread started later counts under `other`. */
function groupFiles(server: ServerProcesses | null, fakesPid: number | null): Record<Group, string[]> {
  const out: Record<Group, string[]> = {
    process: [],
    main: [],
    providers: [],
    media: [],
    helpers: [],
    simulator: [`/proc/${setup.simPid}/stat`],
    fakes: fakesPid ? [`/proc/${fakesPid}/stat`] : [],
  };
  if (!server) return out;
  const { pid, children } = server;
  out.process.push(`/proc/${pid}/stat`);
  out.main.push(`/proc/${pid}/task/${pid}/stat`);
  out.helpers.push(...children.map((c) => `/proc/${c}/stat`));
  let tids: string[] = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    // the server is gone: only its totals (zero) remain
  }
  for (const tid of tids) {
    const name = files.read(`/proc/${pid}/task/${tid}/comm`)?.trim() ?? '';
    if (name === 'xz-providers') out.providers.push(`/proc/${pid}/task/${tid}/stat`);
    else if (name.startsWith('xz-media-')) out.media.push(`/proc/${pid}/task/${tid}/stat`);
  }
  return out;
}

const groups = groupFiles(setup.server, setup.fakesPid);
const serverMainWait = setup.server ? `/proc/${setup.server.pid}/task/${setup.server.pid}/schedstat` : null;
const simulatorWait = `/proc/${setup.simPid}/task/${setup.simPid}/schedstat`;
const samples: Sample[] = [];

/** performance.now() on the simulator main thread's clock (this thread's origin differs). */
const now = (): number => performance.timeOrigin + performance.now() - setup.origin;

/** `tickLateMs`: how late the timer that called this sample fired (null: not called by the timer). */
function take(tickLateMs: number | null): void {
  const m = parseCpuLine(files.read('/proc/stat')?.split('\n', 1)[0] ?? '');
  if (!m) return;
  const ticks: Record<Group, number> = {
    process: 0,
    main: 0,
    providers: 0,
    media: 0,
    helpers: 0,
    simulator: 0,
    fakes: 0,
  };
  for (const g of GROUPS) for (const f of groups[g]) ticks[g] += readTicks(f);
  samples.push({
    at: now(),
    tickLateMs,
    busy: m.busy,
    steal: m.steal,
    total: m.total,
    ticks,
    waitNs: { serverMain: readWaitNs(serverMainWait), simulator: readWaitNs(simulatorWait) },
  });
}

let rss: RssPeak | null = null;
function takeRss(): void {
  if (!setup.server) return;
  const r = procRss(setup.server.pid, files);
  if (!r) return;
  rss = { peak: Math.max(rss?.peak ?? 0, r.rss), hwm: r.hwm };
}

const post = (m: ProbeMessage): void => parentPort?.postMessage(m);

/**
 * Samples on a fixed schedule (start + k × everyMs), each noting how late its timer fired: this
 * thread does little else, so that lateness is what the machine does to a thread that asks for
 * the CPU at a given moment, as the server's pacer does every 60 ms. A tick more than a period
 * late skips the instants it missed.
 */
const start = performance.now();
let k = 0;
let tickTimer: NodeJS.Timeout | undefined;
function tick(): void {
  const due = start + k * setup.everyMs;
  const t = performance.now();
  take(t - due);
  k = Math.max(k + 1, Math.floor((t - start) / setup.everyMs) + 1);
  // On a loaded machine the thread may lose its CPU between here and there: the next tick is then
  // already due (0, not a negative delay Node warns about and treats as 1 ms).
  tickTimer = setTimeout(tick, Math.max(0, start + k * setup.everyMs - performance.now()));
}

take(null);
takeRss();
k = 1;
tickTimer = setTimeout(tick, Math.max(0, start + setup.everyMs - performance.now()));
const rssTimer = setup.rssEveryMs !== null ? setInterval(takeRss, setup.rssEveryMs) : undefined;
parentPort?.on('message', (m: unknown) => {
  if (m !== 'stop') return;
  clearTimeout(tickTimer);
  clearInterval(rssTimer);
  take(null);
  takeRss();
  files.close();
  post({ type: 'done', samples, rss: setup.rssEveryMs !== null ? rss : null });
  parentPort?.close();
});
post({ type: 'ready' });
