/**
 * @module The one mapping of what an OpenAI-compatible request throws (the SDK's error classes,
 * `http-fetch.ts`'s, aborts, our own timeouts) to `VoiceError` codes, for the LLM, ASR and TTS
 * alike: callers decide on retries and apologies from `code` and `retryable`, never from messages.
 */
import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { ErrorCode, VoiceError, isAbortError } from '../../core/errors.ts';
import { AnswerCutError, AnswerTooLargeError } from './http-fetch.ts';

/** Status → code; `what` names the request (`LLM`, `openai transcription`, ...). */
function fromStatus(what: string, status: number, message: string, cause: unknown): VoiceError {
  if (status === 401 || status === 403)
    return new VoiceError(ErrorCode.ProviderRejected, `${what} rejected the credentials (${status}): ${message}`, {
      cause,
    });
  if (status === 429)
    return new VoiceError(ErrorCode.RateLimited, `${what} rate limited (429): ${message}`, { retryable: true, cause });
  if (status === 408)
    return new VoiceError(ErrorCode.Timeout, `${what} request timed out (408): ${message}`, { retryable: true, cause });
  if (status >= 500)
    return new VoiceError(ErrorCode.ProviderFailed, `${what} server error (${status}): ${message}`, {
      retryable: true,
      cause,
    });
  // 3xx, 400, 404, 422...: the request, the URL or the model name is wrong; repeating it cannot help.
  return new VoiceError(ErrorCode.ProviderRejected, `${what} refused the request (${status}): ${message}`, { cause });
}

/** The provider's own error text, without the SDK's status prefix. */
function providerMessage(err: APIError): string {
  const body = err.error as { message?: unknown } | string | undefined;
  if (typeof body === 'string') return body;
  if (body && typeof body.message === 'string') return body.message;
  return err.message;
}

/**
 * Wraps any error from the request named `what`. When `signal` (the request's own) was aborted
 * with a `VoiceError` as its reason (our timeout), that reason is what happened.
 */
export function mapOpenAiError(err: unknown, what: string, signal?: AbortSignal): VoiceError {
  if (signal?.aborted && signal.reason instanceof VoiceError) return signal.reason;
  if (err instanceof VoiceError) return err;
  if (err instanceof APIUserAbortError || isAbortError(err))
    return new VoiceError(ErrorCode.Aborted, 'aborted', { cause: err });
  if (err instanceof AnswerCutError)
    return new VoiceError(ErrorCode.ProviderFailed, `${what}: ${err.message}`, { retryable: true, cause: err });
  if (err instanceof AnswerTooLargeError)
    return new VoiceError(ErrorCode.ProviderFailed, `${what}: ${err.message}`, { cause: err });
  if (err instanceof APIConnectionTimeoutError)
    return new VoiceError(ErrorCode.Timeout, `${what} request timed out`, { retryable: true, cause: err });
  if (err instanceof APIConnectionError) {
    const detail = err.cause instanceof Error ? `: ${err.cause.message}` : '';
    return new VoiceError(ErrorCode.ProviderUnavailable, `${what} endpoint unreachable${detail}`, {
      retryable: true,
      cause: err,
    });
  }
  if (err instanceof APIError) {
    // No status: an `error` sent inside a 200 event stream; the provider failed, a retry may help.
    if (err.status === undefined)
      return new VoiceError(ErrorCode.ProviderFailed, `${what} stream error: ${providerMessage(err)}`, {
        retryable: true,
        cause: err,
      });
    return fromStatus(what, err.status, providerMessage(err), err);
  }
  // Anything else is an answer we cannot read (not JSON, another shape): the same request would get it again.
  const message = err instanceof Error ? err.message : String(err);
  return new VoiceError(ErrorCode.ProviderFailed, `${what} answer unreadable: ${message}`, { cause: err });
}

/** Server-requested wait before a retry, in ms (`retry-after-ms`, or `retry-after` in seconds), if any. */
export function retryAfterMs(err: VoiceError): number | undefined {
  const cause = err.cause;
  if (!(cause instanceof APIError) || !cause.headers) return undefined;
  const ms = Number(cause.headers.get('retry-after-ms'));
  if (Number.isFinite(ms) && ms > 0) return ms;
  const s = Number(cause.headers.get('retry-after'));
  if (Number.isFinite(s) && s > 0) return s * 1000;
  return undefined;
}
