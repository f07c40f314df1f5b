/**
 * @module What the server needs from a device registry (activation mode): bound pairs, pending
 * spoken codes, the token secret. The embedded store is a JSON file (json-device-registry.ts);
 * a shared database can implement the same interface for several replicas.
 */

export interface BoundDevice {
  /** Stable id for `devices revoke`: the pair's first hex digits. */
  id: string;
  deviceId: string;
  clientId: string;
  boundAt: string;
  /** Distinct for every binding ever made in this registry: part of the token (device-token.ts). */
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

export type BindResult = { ok: true; device: BoundDevice } | { ok: false; reason: 'unknown or expired code' | 'registry full' };

export interface DeviceRegistry {
  /** The HMAC key of device tokens. */
  secret(): string;
  isBound(deviceId: string, clientId: string): boolean;
  /** The pair's current binding, if bound. */
  binding(deviceId: string, clientId: string): BoundDevice | undefined;
  /**
   * The pending code for this pair, created (or renewed when expired) if needed, `created` saying
   * which; null when too many are pending or the pair is not well formed (a MAC and a short id).
   */
  pendingCode(deviceId: string, clientId: string): IssuedCode | null;
  bind(code: string): BindResult;
  list(): { bound: BoundDevice[]; pending: PendingCode[] };
  /** Removes a binding by id, MAC or Client-Id; returns what was removed. */
  revoke(idOrDevice: string): BoundDevice[];
  /** Called with the pairs newly bound when a change (also from another process) is seen. */
  onBound(listener: (devices: BoundDevice[]) => void): void;
  /** Called with the pairs no longer bound when a change (also from another process) is seen. */
  onRevoked(listener: (devices: BoundDevice[]) => void): void;
  close(): void;
}
