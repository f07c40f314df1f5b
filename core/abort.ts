/**
 * @module Cancellation: the one way work is tied to a turn (or a session, or a request) in this
 * project. Every stream and provider call takes an AbortSignal; `linkedScope` gives one piece of
 * work its own signal, aborted when a parent aborts or its timeout fires, and `runScoped` runs a
 * call inside such a scope. `watchStart` ties a provider stream to its signal and a start deadline.
 *
 * Why not `AbortSignal.any`: Node keeps a combined signal reachable from its sources while it has
 * abort listeners, and libraries add listeners they never remove (the MCP SDK adds one per request
 * that holds the settled request). On a turn's or session's long-lived signal that kept every
 * page, response and listener of the turn alive until the session ended (measured on the resource
 * stream: +140 KB of heap per 100 KB page). A scope adds exactly one listener to each parent and
 * removes it in `dispose()`; whatever libraries hang on the scope's own signal goes with it.
 */
import { realClock, type Clock } from './clock.ts';
import { ErrorCode, VoiceError } from './errors.ts';

export interface ScopeOptions {
  /** Aborts the scope after this many ms with a retryable Timeout VoiceError. */
  timeoutMs?: number;
  /** Names the work in the timeout message. */
  what?: string;
}

/** One piece of work's signal, linked to its parents until `dispose()`. */
export interface Scope {
  readonly signal: AbortSignal;
  /** True when a parent's abort (not the timeout, not `abort()`) ended the scope. */
  readonly abortedByParent: boolean;
  /** True when the timeout ended the scope. */
  readonly timedOut: boolean;
  /** Aborts this scope only (the parents are untouched). */
  abort(reason?: unknown): void;
  /** Unhooks from the parents and clears the timer. Idempotent; call it when the work is over. */
  dispose(): void;
}

type Parents = AbortSignal | undefined | ReadonlyArray<AbortSignal | undefined>;

/** Creates a scope under `parents` (undefined entries are ignored). */
export function linkedScope(parents: Parents, opts: ScopeOptions = {}): Scope {
  const list = (Array.isArray(parents) ? parents : [parents]).filter((s): s is AbortSignal => s !== undefined);
  const ac = new AbortController();
  let byParent = false;
  let timedOut = false;
  let timer: NodeJS.Timeout | undefined;
  const hooks: Array<() => void> = [];
  const dispose = (): void => {
    clearTimeout(timer);
    timer = undefined;
    for (const unhook of hooks.splice(0)) unhook();
  };
  for (const parent of list) {
    if (parent.aborted) {
      byParent = true;
      ac.abort(parent.reason);
      break;
    }
    const onAbort = (): void => {
      if (!ac.signal.aborted) byParent = true;
      ac.abort(parent.reason);
      dispose();
    };
    parent.addEventListener('abort', onAbort, { once: true });
    hooks.push(() => parent.removeEventListener('abort', onAbort));
  }
  if (ac.signal.aborted) dispose();
  else if (opts.timeoutMs !== undefined) {
    const ms = opts.timeoutMs;
    timer = setTimeout(() => {
      timedOut = true;
      ac.abort(
        new VoiceError(ErrorCode.Timeout, `${opts.what ?? 'operation'} timed out after ${ms} ms`, { retryable: true }),
      );
      dispose();
    }, ms);
  }
  return {
    signal: ac.signal,
    get abortedByParent() {
      return byParent;
    },
    get timedOut() {
      return timedOut;
    },
    abort(reason?: unknown) {
      ac.abort(reason);
      dispose();
    },
    dispose,
  };
}

/**
 * Runs `fn` with a scope's signal and disposes the scope afterwards. Settles as soon as the scope
 * aborts, even when `fn` ignores its signal: a timeout rejects with a retryable Timeout VoiceError
 * naming `what`, a parent's abort with an Aborted VoiceError. Otherwise `fn`'s own result or error.
 */
export async function runScoped<T>(
  parents: Parents,
  fn: (signal: AbortSignal) => Promise<T>,
  opts: ScopeOptions = {},
): Promise<T> {
  const scope = linkedScope(parents, opts);
  const stopped = (): VoiceError =>
    scope.timedOut
      ? (scope.signal.reason as VoiceError)
      : new VoiceError(ErrorCode.Aborted, 'aborted', { cause: scope.signal.reason });
  if (scope.signal.aborted) {
    scope.dispose();
    throw stopped();
  }
  let onAbort = (): void => {};
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(stopped());
    scope.signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([fn(scope.signal), aborted]);
  } catch (err) {
    // The work may fail with its own abort error just before our race sees the abort.
    if (scope.signal.aborted) throw stopped();
    throw err;
  } finally {
    scope.signal.removeEventListener('abort', onAbort);
    scope.dispose();
  }
}

export interface StartWatchOptions {
  /** Ms the work has to start in (until `started()`). */
  startTimeoutMs: number;
  /** The signal aborted (its reason). Runs from `arm()` itself when it already had. */
  onAbort: (reason: unknown) => void;
  /** The message of the retryable Timeout VoiceError given to `onTimeout`. */
  timeoutMessage: string;
  /** The work did not start in time. */
  onTimeout: (error: VoiceError) => void;
}

/** A stream's abort and its start deadline, watched until the stream ends. */
export interface StartWatch {
  /**
   * Hooks to the signal and starts the deadline. False when the signal had already aborted:
   * `onAbort` has run then, and nothing is armed.
   */
  arm(): boolean;
  /** The work has started: the deadline no longer applies (an abort still does). */
  started(): void;
  /** Unhooks from the signal and clears the deadline. Idempotent; call it when the work is over. */
  dispose(): void;
}

/**
 * For a provider stream that must end at once when its signal aborts or when its connection is
 * not ready within a deadline. At most one of `onAbort`/`onTimeout` runs, once, and the watch is
 * disposed before it does. Arming is a step apart from creating so that the handler may reach the
 * watch (its owner's teardown disposes it) even when it runs from within the owner's constructor.
 * The signal is followed through a `linkedScope` (one listener, removed by `dispose`).
 */
export function watchStart(signal: AbortSignal | undefined, opts: StartWatchOptions): StartWatch {
  let scope: Scope | undefined;
  let timer: NodeJS.Timeout | undefined;
  let done = false;
  const onAbort = (): void => {
    const reason = scope?.signal.reason;
    if (end()) opts.onAbort(reason);
  };
  const dispose = (): void => {
    done = true;
    clearTimeout(timer);
    timer = undefined;
    scope?.signal.removeEventListener('abort', onAbort);
    scope?.dispose();
  };
  /** True the first time: the caller's handler may run. */
  const end = (): boolean => {
    if (done) return false;
    dispose();
    return true;
  };
  return {
    arm() {
      if (done || scope) return !done;
      scope = linkedScope(signal);
      if (scope.signal.aborted) {
        onAbort();
        return false;
      }
      scope.signal.addEventListener('abort', onAbort, { once: true });
      timer = setTimeout(() => {
        if (end()) opts.onTimeout(new VoiceError(ErrorCode.Timeout, opts.timeoutMessage, { retryable: true }));
      }, opts.startTimeoutMs);
      return true;
    },
    started() {
      clearTimeout(timer);
      timer = undefined;
    },
    dispose,
  };
}

/** Throws an Aborted VoiceError when the signal is already aborted. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new VoiceError(ErrorCode.Aborted, 'aborted', { cause: signal.reason });
}

/**
 * Resolves after `ms` on `clock`, or rejects with Aborted as soon as the signal aborts (the timer
 * is cleared).
 */
export function sleep(ms: number, signal?: AbortSignal, clock: Clock = realClock): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(new VoiceError(ErrorCode.Aborted, 'aborted', { cause: signal.reason }));
      return;
    }
    const onAbort = (): void => {
      clock.clearTimeout(timer);
      reject(new VoiceError(ErrorCode.Aborted, 'aborted', { cause: signal?.reason }));
    };
    const timer = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * The iterator's next item, or `done` as soon as `signal` aborts (the pending `next()` is then
 * left to settle on its own). For loops that read a producer which may stall: nothing stays
 * attached to the signal once the item is in. A `Promise.race` of each `next()` against one
 * promise per loop kept a reaction per item alive until the loop ended (~660 bytes per frame in
 * the pacer, for a whole sentence).
 */
export function nextUnlessAborted<T>(it: AsyncIterator<T>, signal: AbortSignal): Promise<IteratorResult<T, undefined>> {
  if (signal.aborted) return Promise.resolve({ done: true, value: undefined });
  return new Promise((resolve, reject) => {
    const onAbort = (): void => resolve({ done: true, value: undefined });
    signal.addEventListener('abort', onAbort, { once: true });
    it.next().then(
      (r) => {
        signal.removeEventListener('abort', onAbort);
        resolve(r);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}
