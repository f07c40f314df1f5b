/**
 * @module What an `error` event of the Realtime API means for us, the same for a transcription
 * stream and a conversation with a model: a server error and a rate limit may pass on retry,
 * anything else is a refusal of what we sent.
 */
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import { WHAT } from './connect.ts';

export function apiError(e: { type: string; message: string; code?: string | null | undefined }): VoiceError {
  const text = `${WHAT}: the server refused (${e.type}${e.code ? `, ${e.code}` : ''}): ${e.message}`;
  if (e.type === 'server_error') return new VoiceError(ErrorCode.ProviderFailed, text, { retryable: true });
  if (e.code === 'rate_limit_exceeded') return new VoiceError(ErrorCode.RateLimited, text, { retryable: true });
  return new VoiceError(ErrorCode.ProviderRejected, text);
}
