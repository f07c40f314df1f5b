/**
 * @module The per-device token OTA hands to a bound device: an HMAC of its Device-Id + Client-Id
 * pair and the binding's generation under the server secret. A token is useless for another pair,
 * and each binding of a pair has its own generation, so a token revoked with its binding does not
 * come back when the pair is bound again.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { DeviceRegistry } from '../../store/identity-registry-types.ts';
import { pairKey } from '../../store/pair-key.ts';

/**
 * Generation 0 is a binding stored before bindings had generations: its token is the HMAC of the
 * pair alone, so devices bound then keep theirs. Every new binding has a generation of 1 or more.
 */
export function deviceToken(secret: string, deviceId: string, clientId: string, generation: number): string {
  const input = generation === 0 ? pairKey(deviceId, clientId) : `${pairKey(deviceId, clientId)}\n${generation}`;
  return createHmac('sha256', secret).update(input).digest('base64url');
}

export function verifyDeviceToken(
  secret: string,
  deviceId: string,
  clientId: string,
  generation: number,
  token: string,
): boolean {
  const want = Buffer.from(deviceToken(secret, deviceId, clientId, generation));
  const got = Buffer.from(token);
  return want.length === got.length && timingSafeEqual(want, got);
}

/** What the WebSocket accepts: the token of the pair's current binding; nothing for an unbound pair. */
export function verifyBinding(
  devices: Pick<DeviceRegistry, 'secret' | 'binding'>,
  deviceId: string,
  clientId: string,
  token: string,
): boolean {
  const bound = devices.binding(deviceId, clientId);
  return bound !== undefined && verifyDeviceToken(devices.secret(), deviceId, clientId, bound.generation, token);
}

/**
 * `verifyBinding` asked of the database instead of the cache (see `AuthPolicy.verifyStoredDevice`).
 * A database that cannot answer refuses: the cache has already said no.
 */
export async function verifyStoredBinding(
  devices: Pick<DeviceRegistry, 'secret' | 'storedBinding'>,
  deviceId: string,
  clientId: string,
  token: string,
): Promise<boolean> {
  const bound = await devices.storedBinding(deviceId, clientId).catch(() => undefined);
  return bound !== undefined && verifyDeviceToken(devices.secret(), deviceId, clientId, bound.generation, token);
}
