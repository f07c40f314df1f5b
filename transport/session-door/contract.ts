/**
 * @module The device-transport contract: what every way a device reaches the server (one folder
 * each: `ws/`, `mqtt/`) is given, and what it gives back. A transport accepts connections, checks
 * who they are (its own credentials, its own per-address limits), and for each session a device
 * starts asks the one `SessionDoor` (device-sessions.ts) whether it may open, then opens it over a
 * `DeviceChannel` of its own (voice/session/channel.ts: JSON out, audio out, close). Draining,
 * the same-identity replace rule, capacity, load admission, creating and registering the session
 * and the session-opened hook live behind the door, written once for every transport.
 */
import type { Logger } from '../../core/logger.ts';
import type { RateLimit } from '../../core/token-bucket.ts';
import type { DeviceChannel } from '../../voice/session/channel.ts';
import type { DeviceSession } from '../../voice/session/session.ts';
import type { OverloadSignal } from './admission.ts';

/** Who a session belongs to: the Device-Id + Client-Id pair (a MAC alone is not an identity). */
export interface DevicePair {
  deviceId: string | null;
  clientId: string | null;
}

/** Why a device was turned away (the `reason` label of `xiaozhi_connections_refused_total`). */
export type RefusalReason = 'unauthorized' | 'capacity' | 'draining' | 'overloaded' | 'per_ip';

/** A refusal the door decided; the transport tells the device in its own way (HTTP 503, an unanswered hello). */
export type SessionRefusal =
  | { reason: 'draining'; error: 'server is shutting down' }
  | { reason: 'capacity'; error: 'server at capacity' }
  | { reason: 'overloaded'; error: 'server overloaded'; signal: OverloadSignal };

/** A session as the hooks see it. */
export interface OpenedSession {
  sessionId: string;
  deviceId: string | null;
  clientId: string | null;
}

/** Told about every session opened, on any transport; `ended` aborts when it ends. */
export type SessionOpenedHook = (session: OpenedSession, ended: AbortSignal) => void;

/** What a transport supplies to open one session. */
export interface SessionRequest {
  sessionId: string;
  pair: DevicePair;
  /** From the connection (the WebSocket's Protocol-Version header); null: the hello decides. */
  headerProtocolVersion: number | null;
  channel: DeviceChannel;
  /** The session's logger (a child carrying its sessionId). */
  log: Logger;
  /** `http(s)://host[:port]` the device's connection reached us at (the WebSocket's Host); absent over MQTT. */
  reachedAt?: string;
  /** Control messages per session; absent where the transport bounds them per connection. */
  controlRate?: RateLimit;
}

/** What the server gives every transport: the one way a device session opens. */
export interface SessionDoor {
  /** False once the server drains: no new session opens. */
  readonly accepting: boolean;
  /** Whether `pair` has a live session that a new one would replace (a device reconnecting). */
  replaces(pair: DevicePair): boolean;
  /** The draining refusal, or null while sessions open; counted and logged (rate-limited) on `log`. */
  drainingRefusal(log: Logger): SessionRefusal | null;
  /**
   * Why a new session of `pair` does not fit now (capacity, load), or null; a pair replacing its
   * own session always fits. Counted and logged (rate-limited) on `log`.
   */
  capacityRefusal(pair: DevicePair, log: Logger): SessionRefusal | null;
  /** Counts a refusal the transport decided itself (credentials, its per-address limits). */
  refused(reason: RefusalReason): void;
  /** Creates the session, registers it (ending the pair's older one) and tells the hooks. */
  open(request: SessionRequest): DeviceSession;
}

/**
 * What a transport that listens on its own (a port of its own, not the HTTP server's) gives back:
 * the server closes it after ending the sessions. A transport served by the HTTP server (the
 * WebSocket route) closes with it.
 */
export interface DeviceTransport {
  /** For logs: `mqtt`. */
  readonly name: string;
  /** Ends what is left of its connections and releases its sockets. */
  close(): Promise<void>;
}
