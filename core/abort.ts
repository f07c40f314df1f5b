/**
 * @module AbortSignal helpers. Every stream and provider call in the project takes a signal; these
 * keep the combination and timeout logic in one place.
 */
import { ErrorCode, VoiceError } from './errors.ts';

/** Combines signals; aborted when any input aborts. Undefined inputs are ignored. */
export function anySignal(...signals: Array<AbortSignal | undefined>): AbortSignal {
  const present = signals.filter((s): s is AbortSignal => s !== undefined);
  if (present.length === 1) return present[0] as AbortSignal;
  return AbortSignal.any(present);
}

/** Throws an Aborted VoiceError when the signal is already aborted. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new VoiceError(ErrorCode.Aborted, 'aborted', { cause: signal.reason });
}

/** Resolves after `ms`, or rejects with Aborted as soon as the signal aborts (the timer is cleared). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(new VoiceError(ErrorCode.Aborted, 'aborted', { cause: signal.reason }));
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(new VoiceError(ErrorCode.Aborted, 'aborted', { cause: signal?.reason }));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Runs `fn` with a signal that aborts after `ms` or when `parent` aborts. A timeout becomes a
 * retryable Timeout VoiceError named after `what`; a parent abort stays an Aborted error.
 */
export async function withTimeout<T>(
  what: string,
  ms: number,
  parent: AbortSignal | undefined,
  fn: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(new VoiceError(ErrorCode.Timeout, `${what} timed out after ${ms} ms`, { retryable: true })), ms);
  try {
    return await fn(anySignal(parent, timeout.signal));
  } catch (err) {
    if (timeout.signal.aborted && !parent?.aborted) throw timeout.signal.reason as VoiceError;
    throw err;
  } finally {
    clearTimeout(timer);
  }
}
