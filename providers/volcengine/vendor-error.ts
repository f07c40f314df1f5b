/**
 * @module The vendor's status codes as our errors, shared by the recogniser and the synthesiser:
 * both speak the same family of protocols and number their errors the same way.
 */
import { ErrorCode, VoiceError } from '../../core/errors.ts';

/** Characters of a vendor's error message kept in our error. */
export const MAX_VENDOR_ERROR_CHARS = 300;

/**
 * 45xxxxxx are about the request (parameters, a voice or resource the key may not use, empty or
 * malformed input, a packet timeout): retrying the same request cannot help. 55xxxxxx are the
 * vendor's own failures (55000031: server busy), worth a retry.
 */
export function vendorError(code: number, message: string): VoiceError {
  const text = `volcengine error ${code}: ${message.slice(0, MAX_VENDOR_ERROR_CHARS)}`;
  if (Math.floor(code / 1_000_000) === 45) return new VoiceError(ErrorCode.ProviderRejected, text);
  return new VoiceError(ErrorCode.ProviderFailed, text, { retryable: true });
}
