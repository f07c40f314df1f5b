/**
 * @module Device identity and authorization for the WebSocket upgrade and OTA. Devices send
 * headers; browsers cannot set headers on a WebSocket, so the same values are accepted as query
 * parameters (as the reference server does).
 */
import { timingSafeEqual } from 'node:crypto';

export interface DeviceIdentity {
  deviceId: string | null;
  clientId: string | null;
  /** The bearer token without its scheme, or null. */
  token: string | null;
  /** Protocol-Version header, when present and numeric. */
  protocolVersion: number | null;
}

type HeaderBag = Record<string, string | string[] | undefined>;

function first(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/** Longest identity value read; device tokens are 43 characters, but other clients may use JWTs. */
const MAX_VALUE_CHARS = 4096;

/** Reads identity from headers first, then the query string. Values are trimmed and length-capped. */
export function readIdentity(headers: HeaderBag, query: URLSearchParams): DeviceIdentity {
  const pick = (header: string, param: string, max = 200): string | null => {
    const raw = first(headers[header]) ?? query.get(param) ?? undefined;
    const v = raw?.trim();
    return v ? v.slice(0, max) : null;
  };
  const auth = pick('authorization', 'authorization', MAX_VALUE_CHARS + 16);
  // "Bearer x" → "x"; a value with another scheme is kept whole (the firmware sends it verbatim).
  // The scheme is stripped before the cap, so a long token is not cut short.
  const token = auth
    ? (/^bearer\s+/i.test(auth) ? auth.replace(/^bearer\s+/i, '') : auth).slice(0, MAX_VALUE_CHARS)
    : null;
  const pv = pick('protocol-version', 'protocol-version');
  return {
    deviceId: pick('device-id', 'device-id')?.toLowerCase() ?? null,
    clientId: pick('client-id', 'client-id')?.toLowerCase() ?? null,
    token,
    protocolVersion: pv && /^\d+$/.test(pv) ? Number(pv) : null,
  };
}

function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && timingSafeEqual(ab, bb);
}

export type AuthMode = 'open' | 'tokens' | 'activation';

export interface AuthPolicy {
  mode: AuthMode;
  tokens: readonly string[];
  allowedDevices: readonly string[];
  /** activation: is this pair bound, and is this its token? (The per-process cache: no I/O.) */
  verifyDevice?: (deviceId: string, clientId: string, token: string) => boolean;
  /**
   * activation: the same question asked of the database, for a token the cache refused. The
   * cache hears of a binding made elsewhere (the devices CLI, another replica) only at the next
   * change-feed poll, while OTA and the activation poll read the database: a device that boots
   * right after its bind would otherwise be refused with the token OTA just gave it.
   */
  verifyStoredDevice?: (deviceId: string, clientId: string, token: string) => Promise<boolean>;
}

/** The mode in force: the configured one, else tokens when tokens are listed, else open. */
export function resolveAuthMode(auth: { mode?: AuthMode | undefined; tokens: readonly string[] }): AuthMode {
  return auth.mode ?? (auth.tokens.length > 0 ? 'tokens' : 'open');
}

/**
 * `reason` is for the log only: the answer to the client never says which check failed.
 * `stored`: the refusal came from the cache's view of the bindings, which the database may correct.
 */
export type AuthDecision =
  | { ok: true }
  | { ok: false; reason: string; stored?: { deviceId: string; clientId: string; token: string } };

export function authorize(identity: DeviceIdentity, policy: AuthPolicy): AuthDecision {
  if (policy.mode === 'tokens') {
    if (!identity.token) return { ok: false, reason: 'missing token' };
    const token = identity.token;
    if (!policy.tokens.some((t) => safeEqual(t, token))) return { ok: false, reason: 'invalid token' };
  }
  // Before the binding: a refusal marked `stored` must mean that only the binding is in doubt,
  // since whoever asks the database again lets the device in on its answer alone.
  if (policy.allowedDevices.length > 0) {
    const id = identity.deviceId;
    if (!id) return { ok: false, reason: 'missing Device-Id' };
    if (!policy.allowedDevices.some((d) => d.toLowerCase() === id)) return { ok: false, reason: 'device not allowed' };
  }
  if (policy.mode === 'activation') {
    const { deviceId, clientId, token } = identity;
    if (!deviceId || !clientId) return { ok: false, reason: 'missing Device-Id or Client-Id' };
    if (!token) return { ok: false, reason: 'missing token' };
    if (!policy.verifyDevice?.(deviceId, clientId, token))
      return { ok: false, reason: 'not a bound device or wrong token', stored: { deviceId, clientId, token } };
  }
  return { ok: true };
}
