/**
 * @module The per-session tokens of the vision endpoint: one random token minted when a session's
 * device MCP initializes, bound to that session's device, accepted until the session ends (revoked)
 * or its max age passes, whichever comes first. Held in memory: a token is only ever presented to
 * the replica whose session advertised it (see docs/vision.md on replicas).
 */
import { randomBytes } from 'node:crypto';
import { makeRoom } from '../../core/bounded-map.ts';

/** Who a token was given to. */
export interface VisionGrant {
  sessionId: string;
  deviceId: string;
  clientId: string | null;
}

export type TokenCheck =
  | { ok: true; grant: VisionGrant }
  | { ok: false; reason: 'missing' | 'unknown' | 'expired' | 'other_device' };

export interface MintedToken {
  token: string;
  /** Forgets the token (the session ended). Idempotent. */
  revoke(): void;
}

export interface VisionTokensOptions {
  maxAgeMs: number;
  /** Tokens held at most (the oldest dropped first): one per live session is the usual count. */
  maxTokens: number;
  /** Told each token minted, for log redaction by value. */
  onSecret?: (value: string) => void;
  now?: () => number;
}

interface Entry {
  grant: VisionGrant;
  expiresAt: number;
}

/** MACs are compared case-blind: the header and the hello may differ in case. */
const sameDevice = (a: string, b: string): boolean => a.toLowerCase() === b.toLowerCase();

export class VisionTokens {
  readonly #o: VisionTokensOptions;
  readonly #now: () => number;
  readonly #byToken = new Map<string, Entry>();

  constructor(o: VisionTokensOptions) {
    this.#o = o;
    this.#now = o.now ?? Date.now;
  }

  get size(): number {
    return this.#byToken.size;
  }

  mint(grant: VisionGrant): MintedToken {
    this.#sweep();
    // 192 bits, URL-safe: the firmware sends it verbatim in the Authorization header.
    const token = randomBytes(24).toString('base64url');
    makeRoom(this.#byToken, this.#o.maxTokens);
    this.#byToken.set(token, { grant, expiresAt: this.#now() + this.#o.maxAgeMs });
    this.#o.onSecret?.(token);
    return { token, revoke: () => void this.#byToken.delete(token) };
  }

  /** Whether `token` may be used by the device that sent `deviceId` (its Device-Id header). */
  check(token: string, deviceId: string | null): TokenCheck {
    if (token === '') return { ok: false, reason: 'missing' };
    const entry = this.#byToken.get(token);
    if (!entry) return { ok: false, reason: 'unknown' };
    if (this.#now() >= entry.expiresAt) {
      this.#byToken.delete(token);
      return { ok: false, reason: 'expired' };
    }
    if (deviceId === null || !sameDevice(deviceId, entry.grant.deviceId)) return { ok: false, reason: 'other_device' };
    return { ok: true, grant: entry.grant };
  }

  /** Drops expired tokens from the oldest on (insertion order is expiry order: one max age for all). */
  #sweep(): void {
    const now = this.#now();
    for (const [token, entry] of this.#byToken) {
      if (entry.expiresAt > now) return;
      this.#byToken.delete(token);
    }
  }
}
