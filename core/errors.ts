/**
 * @module Local error type shared by every folder: a stable string `code`, whether a retry can
 * help, and the underlying cause. What a user hears about a failure is chosen from `code` (a
 * provider's code makes the turn speak that part's apology, voice/conversation/turn.ts), never
 * from a message or a stack.
 */

export const ErrorCode = {
  ConfigInvalid: 'config_invalid',
  BadInput: 'bad_input',
  Timeout: 'timeout',
  Aborted: 'aborted',
  ProviderUnavailable: 'provider_unavailable',
  ProviderRejected: 'provider_rejected',
  ProviderFailed: 'provider_failed',
  RateLimited: 'rate_limited',
  ProcessFailed: 'process_failed',
  ToolFailed: 'tool_failed',
  NotFound: 'not_found',
  Internal: 'internal',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

export interface VoiceErrorOptions {
  retryable?: boolean;
  cause?: unknown;
}

/** The one local error class. Construct with a code; never throw bare strings. */
export class VoiceError extends Error {
  readonly code: ErrorCode;
  readonly retryable: boolean;

  constructor(code: ErrorCode, message: string, options: VoiceErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'VoiceError';
    this.code = code;
    this.retryable = options.retryable ?? false;
  }
}

/** True for the errors an aborted AbortSignal produces (DOM AbortError, our Aborted code). */
export function isAbortError(err: unknown): boolean {
  if (err instanceof VoiceError) return err.code === ErrorCode.Aborted;
  if (typeof err === 'object' && err !== null && 'name' in err) {
    const name = (err as { name: unknown }).name;
    return name === 'AbortError';
  }
  return false;
}

/** Wraps anything thrown into a VoiceError without losing the original. */
export function toVoiceError(err: unknown, fallback: ErrorCode = ErrorCode.Internal): VoiceError {
  if (err instanceof VoiceError) return err;
  if (isAbortError(err)) return new VoiceError(ErrorCode.Aborted, 'aborted', { cause: err });
  const message = err instanceof Error ? err.message : String(err);
  return new VoiceError(fallback, message, { cause: err });
}
