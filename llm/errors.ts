/**
 * @module Maps what a chat request throws (`core/openai-wire.ts` errors, aborts) to our `VoiceError`
 * codes, so callers (the session's spoken-apology path, retries) only ever see local codes.
 */
import { ErrorCode, VoiceError, isAbortError } from '../core/errors.ts';
import { WireConnectionError, WireStatusError, WireStreamError } from '../core/openai-wire.ts';

/** Status → code table; anything 5xx not listed is provider_failed and retryable. */
function fromStatus(status: number, message: string, cause: unknown): VoiceError {
  if (status === 401 || status === 403) return new VoiceError(ErrorCode.ProviderRejected, `LLM rejected the credentials (${status}): ${message}`, { cause });
  if (status === 429) return new VoiceError(ErrorCode.RateLimited, `LLM rate limited (429): ${message}`, { retryable: true, cause });
  if (status === 408) return new VoiceError(ErrorCode.Timeout, `LLM request timed out (408): ${message}`, { retryable: true, cause });
  if (status >= 500) return new VoiceError(ErrorCode.ProviderFailed, `LLM server error (${status}): ${message}`, { retryable: true, cause });
  // 400/404/422...: the request or the model name is wrong; repeating it cannot help.
  return new VoiceError(ErrorCode.ProviderRejected, `LLM refused the request (${status}): ${message}`, { cause });
}

/** Wraps any error from a chat request into a VoiceError with the right code and retryability. */
export function mapLlmError(err: unknown): VoiceError {
  if (err instanceof VoiceError) return err;
  if (isAbortError(err)) return new VoiceError(ErrorCode.Aborted, 'aborted', { cause: err });
  if (err instanceof WireConnectionError && err.midAnswer) {
    return new VoiceError(ErrorCode.ProviderFailed, `LLM stream broke off: ${err.message}`, { retryable: true, cause: err });
  }
  if (err instanceof WireConnectionError) {
    const detail = err.cause instanceof Error ? `: ${err.cause.message}` : '';
    return new VoiceError(ErrorCode.ProviderUnavailable, `LLM endpoint unreachable (${err.message})${detail}`, { retryable: true, cause: err });
  }
  if (err instanceof WireStreamError) {
    return new VoiceError(ErrorCode.ProviderFailed, `LLM stream error: ${err.providerMessage}`, { retryable: !err.malformed, cause: err });
  }
  if (err instanceof WireStatusError) return fromStatus(err.status, err.providerMessage, err);
  const message = err instanceof Error ? err.message : String(err);
  return new VoiceError(ErrorCode.ProviderFailed, `LLM call failed: ${message}`, { cause: err });
}

/** Server-requested wait before a retry, in ms (`retry-after-ms` or `retry-after` seconds), if any. */
export function retryAfterMs(err: VoiceError): number | undefined {
  return err.cause instanceof WireStatusError ? err.cause.retryAfterMs() : undefined;
}
