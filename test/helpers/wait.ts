/**
 * The waits of the tests, in one place: nothing a test awaits may hang its file, and a wait that
 * gives up says what it waited for. Deadlines are taken from `performance.now()` and the timers
 * captured at load, so a test that mocks `Date` or the global timers does not stall them.
 */

const realSetTimeout = globalThis.setTimeout;
const realClearTimeout = globalThis.clearTimeout;

export interface WaitOptions {
  /** What is awaited, for the failure message ("the session to end"). */
  what: string;
  /** Gives up after this many ms. Default 5000. */
  timeoutMs?: number;
  /** Polls this often (ms). Default 25. */
  intervalMs?: number;
}

/**
 * Polls `predicate` until it returns a truthy value and returns that value; rejects, naming
 * `what`, when `timeoutMs` passes first (a predicate that throws fails the wait at once).
 */
export async function waitFor<T>(predicate: () => T | Promise<T>, opts: WaitOptions): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? 5000;
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await predicate();
    if (value) return value;
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${opts.what}`);
    await sleep(opts.intervalMs ?? 25);
  }
}

/**
 * Resolves after `ms` of real time. Only for what really takes real time (a child process, a
 * socket, another thread); timing code under test runs on a `ManualClock` instead.
 */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => realSetTimeout(resolve, ms));
}

/** Rejects, naming `what`, when `p` has not settled after `ms`. */
export function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    t = realSetTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => realClearTimeout(t));
}
