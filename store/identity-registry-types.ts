/**
 * @module What the server needs from the device registry (activation mode): bound pairs, pending
 * spoken codes, the token secret. It lives in the store (store/identity-registry.ts): reads on the hot path
 * (`isBound`, `binding`) come from the per-process cache the change feed keeps fresh; OTA reads
 * the database itself (`storedBinding`, `pendingCode`); writes go to the database and are seen by
 * every replica and the CLI.
 */

export interface BoundDevice {
  /** Stable id for `devices revoke`: the pair's first hex digits. */
  id: string;
  deviceId: string;
  clientId: string;
  boundAt: string;
  /** Distinct for every binding ever made in this store: part of the token (features/identity/device-token.ts). */
  generation: number;
}

export interface PendingCode {
  code: string;
  deviceId: string;
  clientId: string;
  /** ms since epoch */
  expiresAt: number;
  /** The generation the binding made by this code will have, so its token can be handed out now. */
  generation: number;
}

/** A pending code as OTA hands it out: `created` when this request made it (a new code to announce). */
export type IssuedCode = PendingCode & { created: boolean };

export type BindResult =
  | { ok: true; device: BoundDevice }
  | { ok: false; reason: 'unknown or expired code' | 'registry full' };

export interface DeviceRegistry {
  /** The HMAC key of device tokens. */
  secret(): string;
  /** From the cache: no database round trip. */
  isBound(deviceId: string, clientId: string): boolean;
  /** The pair's current binding, if bound (from the cache). */
  binding(deviceId: string, clientId: string): BoundDevice | undefined;
  /**
   * The pair's binding as the database holds it now, not as the cache last heard: for OTA and the
   * activation poll (once per boot, not a hot path), which must agree with a bind or revoke the
   * CLI or another replica made a moment ago.
   */
  storedBinding(deviceId: string, clientId: string): Promise<BoundDevice | undefined>;
  /**
   * The pending code for this pair, created (or renewed when expired) if needed, `created` saying
   * which. `source` is the requester's address key: a source holding its budget of codes has its
   * oldest one replaced; a full table drops the oldest code of the source holding the most. Null
   * only when the pair is not well formed (a MAC and a short id).
   */
  pendingCode(deviceId: string, clientId: string, source: string): Promise<IssuedCode | null>;
  /** Binds the pair waiting with this code; `agent` and `alias` go to its device record. */
  bind(code: string, opts?: { agent?: string; alias?: string }): Promise<BindResult>;
  list(): Promise<{ bound: BoundDevice[]; pending: PendingCode[] }>;
  /** Removes a binding by id, MAC or Client-Id; returns what was removed. */
  revoke(idOrDevice: string): Promise<BoundDevice[]>;
  /** Called with the pairs newly bound, by this process or another (the CLI, another replica). */
  onBound(listener: (devices: BoundDevice[]) => void): void;
  /** Called with the pairs no longer bound, by this process or another. */
  onRevoked(listener: (devices: BoundDevice[]) => void): void;
}
