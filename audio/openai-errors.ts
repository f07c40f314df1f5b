/**
 * @module The mapping of errors from OpenAI-compatible audio endpoints (`core/openai-wire.ts`) to
 * VoiceError codes, so callers decide on retries from `code`/`retryable`, never from messages.
 */
import { ErrorCode, VoiceError, isAbortError } from '../core/errors.ts';
import { WireConnectionError, WireStatusError } from '../core/openai-wire.ts';

/** Wraps an error from the request named `what`. A timeout raised through `signal` arrives as its reason. */
export function mapOpenAiError(err: unknown, what: string, signal?: AbortSignal): VoiceError {
  // Checked first: the request then rejects with Aborted, but the reason (a timeout) is what happened.
  if (signal?.aborted && signal.reason instanceof VoiceError) return signal.reason;
  if (err instanceof VoiceError) return err;
  if (isAbortError(err)) return new VoiceError(ErrorCode.Aborted, 'aborted', { cause: err });
  if (err instanceof WireConnectionError) {
    return new VoiceError(err.midAnswer ? ErrorCode.ProviderFailed : ErrorCode.ProviderUnavailable, `${what}: ${err.message}`, { retryable: true, cause: err });
  }
  if (err instanceof WireStatusError) {
    const status = err.status;
    if (status === 429) return new VoiceError(ErrorCode.RateLimited, `${what}: rate limited (429)`, { retryable: true, cause: err });
    if (status >= 500) return new VoiceError(ErrorCode.ProviderFailed, `${what}: server error ${status}`, { retryable: true, cause: err });
    return new VoiceError(ErrorCode.ProviderRejected, `${what}: rejected with ${status}: ${err.providerMessage}`, { cause: err });
  }
  const message = err instanceof Error ? err.message : String(err);
  return new VoiceError(ErrorCode.ProviderFailed, `${what}: ${message}`, { retryable: true, cause: err });
}
