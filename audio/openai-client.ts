/**
 * @module The openai SDK as used for any OpenAI-compatible audio endpoint: one way to build the
 * client, and the mapping of its errors to VoiceError codes, so callers decide on retries from
 * `code`/`retryable`, never from messages.
 */
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { ErrorCode, VoiceError, isAbortError } from '../core/errors.ts';
import { httpFetch } from '../core/http-fetch.ts';

/** Wraps an openai SDK error (or anything else) from the request named `what`. */
export function mapOpenAiError(err: unknown, what: string, signal?: AbortSignal): VoiceError {
  if (err instanceof VoiceError) return err;
  // A timeout we raised through the signal arrives as the signal's reason.
  if (signal?.aborted && signal.reason instanceof VoiceError) return signal.reason;
  if (err instanceof APIUserAbortError || isAbortError(err)) return new VoiceError(ErrorCode.Aborted, 'aborted', { cause: err });
  if (err instanceof APIConnectionTimeoutError) return new VoiceError(ErrorCode.Timeout, `${what} timed out`, { retryable: true, cause: err });
  if (err instanceof APIConnectionError) return new VoiceError(ErrorCode.ProviderUnavailable, `${what}: cannot connect`, { retryable: true, cause: err });
  if (err instanceof APIError) {
    const status = err.status ?? 0;
    if (status === 429) return new VoiceError(ErrorCode.RateLimited, `${what}: rate limited (429)`, { retryable: true, cause: err });
    if (status >= 500) return new VoiceError(ErrorCode.ProviderFailed, `${what}: server error ${status}`, { retryable: true, cause: err });
    return new VoiceError(ErrorCode.ProviderRejected, `${what}: rejected with ${status}: ${err.message}`, { cause: err });
  }
  const message = err instanceof Error ? err.message : String(err);
  return new VoiceError(ErrorCode.ProviderFailed, `${what}: ${message}`, { retryable: true, cause: err });
}

/**
 * Builds a client without SDK retries (the caller decides: a retried upload doubles the latency,
 * a retry mid-sentence repeats audio). Local servers (faster-whisper, Kokoro, ...) need no key: the
 * SDK refuses an empty one, so a placeholder goes in and no Authorization header goes out.
 */
export function createOpenAiClient(opts: { baseURL: string; apiKey: string; timeoutMs: number }): OpenAI {
  return new OpenAI({
    baseURL: opts.baseURL,
    apiKey: opts.apiKey || 'unused',
    maxRetries: 0,
    timeout: opts.timeoutMs,
    fetch: httpFetch,
    ...(opts.apiKey ? {} : { defaultHeaders: { Authorization: null } }),
  });
}
