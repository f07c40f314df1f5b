/**
 * Resource accounting for the fault-injection tests: what this test process holds before a fault
 * and after it, compared once everything has had time to settle.
 *
 * Counted: Node's active handles by type (`process.getActiveResourcesInfo()`: timers, sockets,
 * servers, child processes and their pipes, worker threads and ports), this process's descendant
 * processes by program (from /proc, as the server's own gauge counts them), the server's open HTTP
 * connections, its sessions, and its `xiaozhi_child_processes` / `xiaozhi_sessions_active` gauges.
 *
 * The test runner's own handles (its IPC to the parent, the running test's timeout timer) are the
 * same at both ends as long as both snapshots are taken inside the same test, which is how the
 * fault tests use it. Unref'd timers are not counted by Node: a leak check cannot see those.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { listDescendants } from '../../features/metrics/child-processes.ts';
import type { App } from '../../server/app.ts';
import { pidAlive } from '../integration/mcp/mcp-test-helpers.ts';

export { pidAlive };

/**
 * Short-lived requests (a file read, a DNS lookup, a write in flight): present at one instant or
 * the next by chance, so they are not compared. Everything else is a handle something holds.
 */
const TRANSIENT =
  /Req(Wrap|Callback|Promise)?$|^Immediate$|^WriteWrap$|^ShutdownWrap$|^TCPConnectWrap$|^FileHandleCloseReq$/;

/**
 * Programs that are not the server's: tsx's esbuild compile service, started on demand (depending
 * on tsx's disk cache) by this test process and by every TypeScript fixture process (a stdio MCP
 * server, a restarted HTTP one), and gone when its parent goes. The server never starts one in
 * production, and whether one is running says nothing about a leak.
 */
const NOT_THE_SERVERS = new Set(['esbuild']);

export interface Holdings {
  /** Active handles by type. */
  handles: Record<string, number>;
  /** Descendant processes by program name. */
  programs: Record<string, number>;
  /** Descendant pids (to report which one is new). */
  pids: Array<{ pid: number; name: string; args: string }>;
  /** The server's open TCP connections (devices, HTTP). */
  connections: number;
  sessions: number;
  /** `/metrics` gauges: child processes by program and active sessions. */
  gauge: { children: Record<string, number>; sessions: number };
}

function countBy<T>(items: readonly T[], key: (t: T) => string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const i of items) out[key(i)] = (out[key(i)] ?? 0) + 1;
  return out;
}

/** Reads the server's gauges through Fastify's inject: no socket is opened to take the count. */
async function gauges(app: App): Promise<Holdings['gauge']> {
  const res = await app.fastify.inject({ method: 'GET', url: '/metrics' });
  assert.equal(res.statusCode, 200, `/metrics answered ${res.statusCode}`);
  const children: Record<string, number> = {};
  let sessions = Number.NaN;
  for (const line of res.body.split('\n')) {
    const child = /^xiaozhi_child_processes\{program="([^"]+)"\} (\d+)/.exec(line);
    if (child) children[child[1] as string] = Number(child[2]);
    const s = /^xiaozhi_sessions_active (\d+)/.exec(line);
    if (s) sessions = Number(s[1]);
  }
  // A program whose count fell to 0 may be reported as 0 or not at all: the same thing.
  for (const [k, v] of Object.entries(children)) if (v === 0 || NOT_THE_SERVERS.has(k)) delete children[k];
  return { children, sessions };
}

/** What this process and `app` hold right now. */
export async function holdings(app: App): Promise<Holdings> {
  const gauge = await gauges(app);
  const procs = await listDescendants();
  const connections = await new Promise<number>((resolve, reject) =>
    app.fastify.server.getConnections((err, n) => (err ? reject(err) : resolve(n))),
  );
  const handles = countBy(
    process.getActiveResourcesInfo().filter((t) => !TRANSIENT.test(t)),
    (t) => t,
  );
  return {
    handles,
    programs: countBy(
      procs.filter((p) => !NOT_THE_SERVERS.has(p.name)),
      (p) => p.name,
    ),
    pids: procs.map(({ pid, name, args }) => ({ pid, name, args })),
    connections,
    sessions: app.registry.size,
    gauge,
  };
}

/** Differences that count as a leak (or a loss) between two snapshots; empty when none. */
function differences(before: Holdings, now: Holdings): string[] {
  const out: string[] = [];
  const cmp = (what: string, a: Record<string, number>, b: Record<string, number>, onlyMore = false): void => {
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
      const was = a[k] ?? 0;
      const is = b[k] ?? 0;
      if (onlyMore ? is > was : is !== was) out.push(`${what} ${k}: ${was} → ${is}`);
    }
  };
  // Handles: only more is a leak. The fake peers' own server-side sockets (Node keeps the last
  // one of an exchange until undici lets go of it) may be open at the start and gone at the end.
  cmp('handle', before.handles, now.handles, true);
  cmp('process', before.programs, now.programs);
  cmp('gauge xiaozhi_child_processes', before.gauge.children, now.gauge.children);
  if (now.connections !== before.connections)
    out.push(`server connections: ${before.connections} → ${now.connections}`);
  if (now.sessions !== 0) out.push(`sessions in the registry: ${now.sessions}`);
  if (now.gauge.sessions !== 0) out.push(`gauge xiaozhi_sessions_active: ${now.gauge.sessions}`);
  if (out.some((d) => d.startsWith('process'))) {
    const old = new Set(before.pids.map((p) => p.pid));
    for (const p of now.pids) if (!old.has(p.pid)) out.push(`  new process ${p.pid}: ${p.args.slice(0, 160)}`);
  }
  return out;
}

export interface NoLeakOptions {
  /** How long handles may take to be released (a closing handshake, a killed child's exit). Default 6000 ms. */
  settleMs?: number;
  /** Processes that must be gone (e.g. the one the test killed, which a successor replaced). */
  deadPids?: readonly number[];
}

/**
 * Waits until what the process holds is back to `before` (sessions at 0), failing with the
 * difference when it is not within `settleMs`.
 */
export async function assertNoLeaks(app: App, before: Holdings, opts: NoLeakOptions = {}): Promise<void> {
  const deadline = Date.now() + (opts.settleMs ?? 6000);
  for (;;) {
    const now = await holdings(app);
    const diff = differences(before, now);
    for (const pid of opts.deadPids ?? []) if (pidAlive(pid)) diff.push(`process ${pid} is still alive`);

    if (diff.length === 0) return;
    if (Date.now() > deadline) assert.fail(`resources not released after the fault:\n${diff.join('\n')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** TCP states that hold no socket of a process any more (TIME_WAIT, CLOSE): the kernel's alone. */
const KERNEL_ONLY_TCP_STATES = new Set(['06', '07']);

/**
 * Open TCP connections on this machine from a client to 127.0.0.1:`port` (IPv4 loopback, from
 * /proc/net/tcp: the client ends, whose remote port is `port`). Counts every process's, so use it
 * for a port only this test talks to.
 */
export function loopbackConnectionsTo(port: number): number {
  const want = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  let n = 0;
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f[2] === want && !KERNEL_ONLY_TCP_STATES.has(f[3] ?? '')) n++;
  }
  return n;
}
