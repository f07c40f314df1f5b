/**
 * @module The one door every transport opens device sessions through (contract.ts `SessionDoor`):
 * draining, the same-identity replace rule, the session budget (`server.maxSessions`), load
 * admission (admission.ts), creating the DeviceSession, the registry and the session-opened hooks.
 * Each was written once per transport before, and the copies had drifted apart (only the
 * WebSocket's refusals were counted in the metrics).
 */
import type { Logger } from '../../core/logger.ts';
import { createLogRateLimit } from '../../core/log-rate-limit.ts';
import { pairKey } from '../../store/pair-key.ts';
import type { ConversationFactory } from '../../voice/session/conversation.ts';
import type { SessionRegistry } from '../../voice/session/registry.ts';
import { DeviceSession } from '../../voice/session/session.ts';
import type { AdmissionGate } from './admission.ts';
import type {
  DevicePair,
  RefusalReason,
  SessionDoor,
  SessionOpenedHook,
  SessionRefusal,
  SessionRequest,
} from './contract.ts';

/** What every session is created with, whatever carries it. */
export interface SessionSettings {
  helloTimeoutMs: number;
  idleTimeoutMs: number;
  outputSampleRate: number;
  frameDurationMs: number;
}

export interface DeviceSessionsOptions {
  registry: SessionRegistry;
  createConversation: ConversationFactory;
  session: SessionSettings;
  /** Concurrent sessions (`server.maxSessions`); 0: no limit. */
  maxSessions: number;
  /** Load-based admission (event-loop delay, media queue); absent: only `maxSessions` limits. Closed with the door. */
  admission?: AdmissionGate;
  /** Called in this order for each session opened (the store's records, then push's queued messages). */
  onOpened?: readonly SessionOpenedHook[];
  /** Told about every refusal, the door's and the transports' own (metrics). */
  onRefused?: (reason: RefusalReason) => void;
}

/** Who may replace whom: the Device-Id + Client-Id pair (a MAC alone is not an identity). */
export function identityKey(pair: DevicePair): string | null {
  return pair.deviceId ? pairKey(pair.deviceId, pair.clientId ?? '') : null;
}

const DRAINING: SessionRefusal = { reason: 'draining', error: 'server is shutting down' };
const FULL: SessionRefusal = { reason: 'capacity', error: 'server at capacity' };

export class DeviceSessions implements SessionDoor {
  readonly registry: SessionRegistry;
  readonly #opts: DeviceSessionsOptions;
  // A storm of refused devices (or an attacker) must not flood the log: one line per second per
  // kind of refusal, on every transport together, carrying how many were not logged since.
  readonly #refusalLog = createLogRateLimit({ perSecond: 1, burst: 1 });
  #accepting = true;

  constructor(opts: DeviceSessionsOptions) {
    this.registry = opts.registry;
    this.#opts = opts;
  }

  get accepting(): boolean {
    return this.#accepting;
  }

  /** Draining: every transport refuses new sessions from now on (those open go on). */
  stopAccepting(): void {
    this.#accepting = false;
  }

  replaces(pair: DevicePair): boolean {
    const key = identityKey(pair);
    return key !== null && this.registry.byIdentity(key) !== undefined;
  }

  drainingRefusal(log: Logger): SessionRefusal | null {
    if (this.#accepting) return null;
    this.refused('draining');
    this.#refusalLog.wrap(log).warn('device refused: server is shutting down');
    return DRAINING;
  }

  capacityRefusal(pair: DevicePair, log: Logger): SessionRefusal | null {
    // A device replacing its own session adds no load: it fits the budget and passes admission.
    if (this.replaces(pair)) return null;
    const { maxSessions, admission } = this.#opts;
    const sessions = this.registry.size;
    if (maxSessions > 0 && sessions >= maxSessions) {
      this.refused('capacity');
      this.#refusalLog.wrap(log).warn({ sessions, maxSessions }, 'device refused: server at capacity');
      return FULL;
    }
    const verdict = admission?.check();
    if (verdict && !verdict.ok) {
      this.refused('overloaded');
      this.#refusalLog
        .wrap(log)
        .warn(
          { signal: verdict.signal, value: verdict.value, limit: verdict.limit },
          'device refused: server overloaded',
        );
      return { reason: 'overloaded', error: 'server overloaded', signal: verdict.signal };
    }
    return null;
  }

  refused(reason: RefusalReason): void {
    this.#opts.onRefused?.(reason);
  }

  open(request: SessionRequest): DeviceSession {
    const { sessionId, pair } = request;
    const session = new DeviceSession({
      sessionId,
      deviceId: pair.deviceId,
      clientId: pair.clientId,
      headerProtocolVersion: request.headerProtocolVersion,
      channel: request.channel,
      log: request.log,
      ...this.#opts.session,
      createConversation: this.#opts.createConversation,
      ...(request.controlRate ? { controlRate: request.controlRate } : {}),
      ...(request.reachedAt ? { reachedAt: request.reachedAt } : {}),
      onEnded: (ended) => this.registry.remove(ended),
    });
    // An older session of the same pair is closed with `Replaced` here (voice/session/registry.ts).
    this.registry.add(session, identityKey(pair));
    const opened = { sessionId, deviceId: pair.deviceId, clientId: pair.clientId };
    for (const hook of this.#opts.onOpened ?? []) hook(opened, session.signal);
    return session;
  }

  /** Releases load admission's timer and histogram. Idempotent. */
  close(): void {
    this.#accepting = false;
    this.#opts.admission?.close();
  }
}
