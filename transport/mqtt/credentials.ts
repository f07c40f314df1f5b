/**
 * @module The per-device credentials of the embedded MQTT broker, handed out by OTA and checked
 * at CONNECT. The client id names the pair (`xiaozhi@@@<mac with _>@@@<client id>`), the username
 * is the MAC, and the password is an HMAC of the pair under the device-token secret: of the pair's
 * binding generation in the modes that bind devices (so a revoked binding's password never works
 * again, even when the pair is bound anew), of the pair alone in `open` mode. Nothing is stored.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { ClientIdSchema, DeviceIdSchema } from '../../protocol/ota.ts';
import { pairKey } from '../../store/pair-key.ts';
import type { AuthMode } from '../../features/identity/index.ts';

export interface MqttCredentials {
  client_id: string;
  username: string;
  password: string;
}

const CLIENT_ID_PREFIX = 'xiaozhi@@@';
const CLIENT_ID_RE = /^xiaozhi@@@([0-9a-f]{2}(?:_[0-9a-f]{2}){5})@@@(.+)$/;
/** Longest client id we read: the prefix, a MAC and a Client-Id of 36 characters, with room. */
export const MAX_MQTT_CLIENT_ID_CHARS = 96;

export function mqttClientId(deviceId: string, clientId: string): string {
  return `${CLIENT_ID_PREFIX}${deviceId.toLowerCase().replaceAll(':', '_')}@@@${clientId.toLowerCase()}`;
}

/** The pair a client id names, or null when it is not one of ours (or not well formed). */
export function parseMqttClientId(id: string): { deviceId: string; clientId: string } | null {
  if (id.length > MAX_MQTT_CLIENT_ID_CHARS) return null;
  const m = CLIENT_ID_RE.exec(id);
  if (!m) return null;
  const device = DeviceIdSchema.safeParse((m[1] ?? '').replaceAll('_', ':'));
  const client = ClientIdSchema.safeParse(m[2] ?? '');
  if (!device.success || !client.success || client.data !== m[2]) return null;
  return { deviceId: device.data, clientId: client.data };
}

/** `generation` null: open mode (no binding). */
export function mqttPassword(secret: string, deviceId: string, clientId: string, generation: number | null): string {
  return createHmac('sha256', secret)
    .update(`mqtt\n${pairKey(deviceId, clientId)}\n${generation ?? 'open'}`)
    .digest('base64url');
}

export function mqttCredentials(
  secret: string,
  deviceId: string,
  clientId: string,
  generation: number | null,
): MqttCredentials {
  return {
    client_id: mqttClientId(deviceId, clientId),
    username: deviceId.toLowerCase(),
    password: mqttPassword(secret, deviceId, clientId, generation),
  };
}

export interface MqttAuthPolicy {
  mode: AuthMode;
  /** MACs allowed (empty: any). */
  allowedDevices: readonly string[];
  secret(): string;
  /** The pair's current binding (modes `activation` and `tokens`), from the per-process cache. */
  binding(deviceId: string, clientId: string): { generation: number } | undefined;
  /**
   * The same read from the database, for credentials the cache refused: the cache hears of a
   * binding made elsewhere (the devices CLI, another replica) only at the next change-feed poll,
   * while OTA reads the database and hands out this binding's password at once.
   */
  storedBinding?(deviceId: string, clientId: string): Promise<{ generation: number } | undefined>;
}

/**
 * `reason` is for the log only: the device is told "bad username or password" whatever failed.
 * `stored`: the refusal came from the cache's view of the bindings, which the database may correct.
 */
export type MqttAuthDecision =
  | { ok: true; deviceId: string; clientId: string }
  | { ok: false; reason: string; stored?: true };

/**
 * Checks a CONNECT's credentials. In `open` mode any well-formed pair with its password is let in;
 * in `activation` and `tokens` only a bound pair, with the password of its current binding.
 */
export function checkMqttCredentials(
  clientId: string,
  username: string | undefined,
  password: Buffer | undefined,
  policy: MqttAuthPolicy,
): MqttAuthDecision {
  const pair = parseMqttClientId(clientId);
  if (!pair) return { ok: false, reason: 'client id is not a device pair' };
  if (username !== pair.deviceId) return { ok: false, reason: 'username does not match the client id' };
  if (!password) return { ok: false, reason: 'no password' };
  if (policy.allowedDevices.length > 0 && !policy.allowedDevices.some((d) => d.toLowerCase() === pair.deviceId))
    return { ok: false, reason: 'device not allowed' };
  let generation: number | null = null;
  if (policy.mode !== 'open') {
    const bound = policy.binding(pair.deviceId, pair.clientId);
    if (!bound) return { ok: false, reason: 'not a bound device', stored: true };
    generation = bound.generation;
  }
  if (!passwordMatches(policy.secret(), pair, generation, password))
    return { ok: false, reason: 'wrong password', ...(generation !== null ? { stored: true as const } : {}) };
  return { ok: true, ...pair };
}

/** `checkMqttCredentials` again with the binding read from the database (only where it said `stored`). */
export async function checkStoredMqttCredentials(
  clientId: string,
  password: Buffer,
  policy: MqttAuthPolicy,
): Promise<MqttAuthDecision> {
  const pair = parseMqttClientId(clientId);
  if (!pair || !policy.storedBinding) return { ok: false, reason: 'not a bound device' };
  const bound = await policy.storedBinding(pair.deviceId, pair.clientId).catch(() => undefined);
  if (!bound) return { ok: false, reason: 'not a bound device' };
  if (!passwordMatches(policy.secret(), pair, bound.generation, password))
    return { ok: false, reason: 'wrong password' };
  return { ok: true, ...pair };
}

function passwordMatches(
  secret: string,
  pair: { deviceId: string; clientId: string },
  generation: number | null,
  password: Buffer,
): boolean {
  const want = Buffer.from(mqttPassword(secret, pair.deviceId, pair.clientId, generation));
  return want.length === password.length && timingSafeEqual(want, password);
}
