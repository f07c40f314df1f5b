/**
 * @module The one way audio/ starts a child process (ffmpeg, espeak-ng, pocketsphinx): it is
 * killed when the signal aborts, its stderr tail is kept for error messages, and `exited`
 * settles exactly once, also when the executable is missing (spawn 'error').
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';

/** How a child ended. `error` is set when it could not be started (e.g. ENOENT). */
export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  error?: Error;
}

export interface ManagedChild {
  readonly proc: ChildProcessWithoutNullStreams;
  /** Settles when the process has exited and its stdio closed (never rejects). */
  readonly exited: Promise<ChildExit>;
  /** True until the process has exited. */
  readonly running: boolean;
  /** The last bytes the process wrote to stderr, as text (trimmed). */
  stderrTail(): string;
  /** SIGKILLs the process (its whole process group when started with `processGroup`). Idempotent. */
  kill(): void;
}

export interface SpawnOptions {
  /** Aborting kills the process. */
  signal?: AbortSignal;
  /**
   * Start the child in its own process group and kill the group: needed for `sh -c 'a | b'`
   * wrappers, where killing `sh` alone would leave `a` and `b` running.
   */
  processGroup?: boolean;
  /** How many stderr bytes to keep (default 4 KiB). */
  stderrBytes?: number;
}

/** Spawns `command` with piped stdio; see `ManagedChild`. */
export function spawnManaged(command: string, args: readonly string[], opts: SpawnOptions = {}): ManagedChild {
  const keep = opts.stderrBytes ?? 4096;
  const proc = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'], detached: opts.processGroup === true });
  let tail = Buffer.alloc(0);
  let running = true;
  proc.stderr.on('data', (chunk: Buffer) => {
    tail =
      tail.length + chunk.length <= keep ? Buffer.concat([tail, chunk]) : Buffer.concat([tail, chunk]).subarray(-keep);
  });
  // A child that dies while we write must not crash the process with an unhandled EPIPE.
  proc.stdin.on('error', () => {});
  proc.stdout.on('error', () => {});

  const kill = (): void => {
    if (!running) return;
    try {
      if (opts.processGroup === true && proc.pid !== undefined) process.kill(-proc.pid, 'SIGKILL');
      else proc.kill('SIGKILL');
    } catch {
      // already gone
    }
  };
  const onAbort = (): void => kill();
  opts.signal?.addEventListener('abort', onAbort, { once: true });

  const exited = new Promise<ChildExit>((resolve) => {
    let settled = false;
    const done = (exit: ChildExit): void => {
      if (settled) return;
      settled = true;
      running = false;
      opts.signal?.removeEventListener('abort', onAbort);
      resolve(exit);
    };
    proc.once('error', (error) => {
      // 'error' without a pid means it never started; 'close' may not follow.
      if (proc.pid === undefined) done({ code: null, signal: null, error });
    });
    proc.once('close', (code, signal) => done({ code, signal }));
  });
  if (opts.signal?.aborted) kill();

  return {
    proc,
    exited,
    get running() {
      return running;
    },
    stderrTail: () => tail.toString('utf8').trim(),
    kill,
  };
}

/** Writes `chunk` to a child's stdin honouring backpressure; false when stdin is gone. */
export async function writeWithBackpressure(
  proc: ChildProcessWithoutNullStreams,
  chunk: Uint8Array,
  stop: AbortSignal,
): Promise<boolean> {
  const stdin = proc.stdin;
  if (stdin.destroyed || stdin.writableEnded || stop.aborted) return false;
  if (stdin.write(chunk)) return true;
  await new Promise<void>((resolve) => {
    const finish = (): void => {
      stdin.off('drain', finish);
      stdin.off('close', finish);
      stdin.off('error', finish);
      stop.removeEventListener('abort', finish);
      resolve();
    };
    stdin.once('drain', finish);
    stdin.once('close', finish);
    stdin.once('error', finish);
    stop.addEventListener('abort', finish, { once: true });
  });
  return !stdin.destroyed && !stop.aborted;
}
