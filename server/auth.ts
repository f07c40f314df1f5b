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

/** Reads identity from headers first, then the query string. Values are trimmed and length-capped. */
export function readIdentity(headers: HeaderBag, query: URLSearchParams): DeviceIdentity {
  const pick = (header: string, param: string): string | null => {
    const raw = first(headers[header]) ?? query.get(param) ?? undefined;
    const v = raw?.trim();
    return v ? v.slice(0, 200) : null;
  };
  const auth = pick('authorization', 'authorization');
  // "Bearer x" → "x"; a value with another scheme is kept whole (the firmware sends it verbatim).
  const token = auth ? (/^bearer\s+/i.test(auth) ? auth.replace(/^bearer\s+/i, '') : auth) : null;
  const pv = pick('protocol-version', 'protocol-version');
  return {
    deviceId: pick('device-id', 'device-id')?.toLowerCase() ?? null,
    clientId: pick('client-id', 'client-id'),
    token,
    protocolVersion: pv && /^\d+$/.test(pv) ? Number(pv) : null,
  };
}

function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && timingSafeEqual(ab, bb);
}

export interface AuthPolicy {
  tokens: readonly string[];
  allowedDevices: readonly string[];
}

export type AuthDecision = { ok: true } | { ok: false; reason: string };

/** Empty token list: no token needed. Empty allowlist: any device. */
export function authorize(identity: DeviceIdentity, policy: AuthPolicy): AuthDecision {
  if (policy.tokens.length > 0) {
    if (!identity.token) return { ok: false, reason: 'missing token' };
    const token = identity.token;
    if (!policy.tokens.some((t) => safeEqual(t, token))) return { ok: false, reason: 'invalid token' };
  }
  if (policy.allowedDevices.length > 0) {
    const id = identity.deviceId;
    if (!id) return { ok: false, reason: 'missing Device-Id' };
    if (!policy.allowedDevices.some((d) => d.toLowerCase() === id)) return { ok: false, reason: 'device not allowed' };
  }
  return { ok: true };
}
