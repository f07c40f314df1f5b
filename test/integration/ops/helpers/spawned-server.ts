/**
 * The server as a real separate process (on the host, or inside a container through a launcher
 * such as `buildah run`), for the shutdown test and the container smoke test: spawn, wait for
 * /healthz, find the process to signal, and make sure nothing is left behind.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { listDescendants, type ProcEntry } from '../../../../features/metrics/child-processes.ts';
import { sleep } from '../../../helpers/wait.ts';

export interface SpawnServerOptions {
  command: string;
  args: readonly string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** The port the server will listen on (127.0.0.1). */
  port: number;
  /** Longest wait for /healthz, ms. */
  readyTimeoutMs?: number;
}

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface SpawnedServer {
  proc: ChildProcess;
  httpUrl: string;
  wsUrl: string;
  /** Spawn to the first 200 from /healthz, ms. */
  readyMs: number;
  exited: Promise<ExitInfo>;
  /** Everything the process wrote (stdout and stderr, interleaved). */
  output(): string;
  /** What the process wrote to stdout alone (the JSON log lines). */
  stdout(): string;
  /** JSON log lines whose `msg` equals `msg`. */
  logLines(msg: string): Array<Record<string, unknown>>;
  /** Descendants of the spawned process now (empty after a clean exit). */
  descendants(): Promise<ProcEntry[]>;
  /** SIGKILLs the process and every descendant still running. Idempotent. */
  kill(): Promise<void>;
}

/** The lines of `text` (a process's stdout) that are not one JSON object each. */
export function nonJsonLines(text: string): string[] {
  return text
    .split('\n')
    .filter((l) => l !== '')
    .filter((l) => {
      try {
        const v: unknown = JSON.parse(l);
        return typeof v !== 'object' || v === null || Array.isArray(v);
      } catch {
        return true;
      }
    });
}

/** The JSON log lines of `text` (a process's output) whose `msg` equals `msg`. */
export function jsonLogLines(text: string, msg: string): Array<Record<string, unknown>> {
  return text
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        return [];
      }
    })
    .filter((j) => j.msg === msg);
}

/** A free TCP port on 127.0.0.1 (closed again before returning). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** Spawns the server and resolves once /healthz answers; rejects (after killing it) otherwise. */
export async function spawnServer(opts: SpawnServerOptions): Promise<SpawnedServer> {
  const started = performance.now();
  const proc = spawn(opts.command, [...opts.args], {
    cwd: opts.cwd,
    env: opts.env ?? process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let stdout = '';
  const append = (b: Buffer): void => {
    // Bounded: a chatty debug log must not grow the test's memory without limit.
    out = (out + b.toString('utf8')).slice(-4_000_000);
  };
  proc.stdout?.on('data', (b: Buffer) => {
    append(b);
    stdout = (stdout + b.toString('utf8')).slice(-4_000_000);
  });
  proc.stderr?.on('data', append);
  const exited = new Promise<ExitInfo>((resolve) => {
    proc.once('exit', (code, signal) => resolve({ code, signal }));
    proc.once('error', () => resolve({ code: null, signal: null }));
  });
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  const httpUrl = `http://127.0.0.1:${opts.port}`;
  const rootPid = proc.pid ?? -1;
  const known = new Map<number, ProcEntry>();
  const descendants = async (): Promise<ProcEntry[]> => {
    const list = rootPid > 0 ? await listDescendants({ pid: rootPid }) : [];
    for (const e of list) known.set(e.pid, e);
    return list;
  };
  const kill = async (): Promise<void> => {
    // Descendants re-parented to init after their parent died are tracked from earlier scans.
    for (const e of await descendants()) known.set(e.pid, e);
    for (const pid of [rootPid, ...known.keys()]) {
      try {
        if (pid > 0) process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    if (!gone) await Promise.race([exited, sleep(2000)]);
  };

  const deadline = Date.now() + (opts.readyTimeoutMs ?? 60_000);
  let readyMs = -1;
  while (Date.now() < deadline && !gone) {
    try {
      const res = await fetch(`${httpUrl}/healthz`, { signal: AbortSignal.timeout(1000) });
      if (res.ok) {
        readyMs = performance.now() - started;
        break;
      }
    } catch {
      // Not listening yet.
    }
    await descendants();
    await sleep(100);
  }
  if (readyMs < 0) {
    await kill();
    throw new Error(
      `server did not become healthy (${gone ? 'it exited' : 'timeout'}); output tail:\n${out.slice(-3000)}`,
    );
  }
  return {
    proc,
    httpUrl,
    wsUrl: `ws://127.0.0.1:${opts.port}/xiaozhi/v1/`,
    readyMs,
    exited,
    output: () => out,
    stdout: () => stdout,
    logLines: (msg) => jsonLogLines(out, msg),
    descendants,
    kill,
  };
}
