/**
 * @module The per-device token OTA hands to a bound device: an HMAC of its Device-Id + Client-Id
 * pair under the server secret. Any replica holding the secret verifies it without a lookup, and
 * a token is useless for another pair.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** Canonical form of a pair: the firmware sends a lowercase MAC and a UUID; case never matters. */
export function pairKey(deviceId: string, clientId: string): string {
  return `${deviceId.toLowerCase()}\n${clientId.toLowerCase()}`;
}

export function deviceToken(secret: string, deviceId: string, clientId: string): string {
  return createHmac('sha256', secret).update(pairKey(deviceId, clientId)).digest('base64url');
}

export function verifyDeviceToken(secret: string, deviceId: string, clientId: string, token: string): boolean {
  const want = Buffer.from(deviceToken(secret, deviceId, clientId));
  const got = Buffer.from(token);
  return want.length === got.length && timingSafeEqual(want, got);
}
