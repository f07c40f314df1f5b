/**
 * @module Maps what the openai SDK throws to our `VoiceError` codes, so callers (the session's
 * spoken-apology path, retries) only ever see local codes.
 */
import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { ErrorCode, VoiceError, isAbortError } from '../core/errors.ts';

/** Status → code table; anything 5xx not listed is provider_failed and retryable. */
function fromStatus(status: number, message: string, cause: unknown): VoiceError {
  if (status === 401 || status === 403) return new VoiceError(ErrorCode.ProviderRejected, `LLM rejected the credentials (${status}): ${message}`, { cause });
  if (status === 429) return new VoiceError(ErrorCode.RateLimited, `LLM rate limited (429): ${message}`, { retryable: true, cause });
  if (status === 408) return new VoiceError(ErrorCode.Timeout, `LLM request timed out (408): ${message}`, { retryable: true, cause });
  if (status >= 500) return new VoiceError(ErrorCode.ProviderFailed, `LLM server error (${status}): ${message}`, { retryable: true, cause });
  // 400/404/422...: the request or the model name is wrong; repeating it cannot help.
  return new VoiceError(ErrorCode.ProviderRejected, `LLM refused the request (${status}): ${message}`, { cause });
}

/** The provider's own error text, without the SDK's status prefix. */
function providerMessage(err: APIError): string {
  const body = err.error as { message?: unknown } | undefined;
  if (body && typeof body.message === 'string') return body.message;
  return err.message;
}

/** Wraps any error from an SDK call into a VoiceError with the right code and retryability. */
export function mapLlmError(err: unknown): VoiceError {
  if (err instanceof VoiceError) return err;
  if (err instanceof APIUserAbortError || isAbortError(err)) return new VoiceError(ErrorCode.Aborted, 'aborted', { cause: err });
  if (err instanceof APIConnectionTimeoutError) return new VoiceError(ErrorCode.Timeout, 'LLM request timed out', { retryable: true, cause: err });
  if (err instanceof APIConnectionError) {
    const detail = err.cause instanceof Error ? `: ${err.cause.message}` : '';
    return new VoiceError(ErrorCode.ProviderUnavailable, `LLM endpoint unreachable${detail}`, { retryable: true, cause: err });
  }
  if (err instanceof APIError) {
    // status undefined: an `error` object arrived inside the SSE stream.
    if (err.status === undefined) return new VoiceError(ErrorCode.ProviderFailed, `LLM stream error: ${providerMessage(err)}`, { retryable: true, cause: err });
    return fromStatus(err.status, providerMessage(err), err);
  }
  const message = err instanceof Error ? err.message : String(err);
  return new VoiceError(ErrorCode.ProviderFailed, `LLM call failed: ${message}`, { cause: err });
}

/** Server-requested wait before a retry, in ms (`retry-after-ms` or `retry-after` seconds), if any. */
export function retryAfterMs(err: VoiceError): number | undefined {
  const cause = err.cause;
  if (!(cause instanceof APIError) || !cause.headers) return undefined;
  const ms = Number(cause.headers.get('retry-after-ms'));
  if (Number.isFinite(ms) && ms > 0) return ms;
  const s = Number(cause.headers.get('retry-after'));
  if (Number.isFinite(s) && s > 0) return s * 1000;
  return undefined;
}
