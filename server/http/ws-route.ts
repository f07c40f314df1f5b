/**
 * @module The device WebSocket endpoint (`/xiaozhi/v1/`). Authorization and admission happen
 * before the upgrade completes (a refused device gets HTTP 401 or 503, never a socket); each
 * accepted connection becomes one DeviceSession with its own child logger.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { RawData, WebSocket } from 'ws';
import { authorize, readIdentity, type AuthPolicy, createOriginCheck } from '../../features/identity/index.ts';
import { DeviceSession } from '../../voice/session/session.ts';
import type { SessionRegistry } from '../../voice/session/registry.ts';
import type { ConversationFactory } from '../../voice/session/conversation.ts';
import type { AdmissionGate } from '../admission.ts';
import { WsDeviceChannel } from './ws-channel.ts';
import { pairKey } from '../../store/pair-key.ts';
import { CloseCode } from '../../protocol/close-codes.ts';
import { createLogRateLimit } from '../../core/log-rate-limit.ts';
import type { RateLimit } from '../../core/token-bucket.ts';
import { PerIpLimits } from '../../core/per-ip-limits.ts';
import { addressKey, clientAddress } from '../../core/address-key.ts';

export const DEVICE_WS_PATH = '/xiaozhi/v1/';

export interface WsRouteOptions {
  auth: AuthPolicy;
  /** Browser origins allowed besides the server's own page (devices send no Origin). */
  allowedOrigins: readonly string[];
  registry: SessionRegistry;
  helloTimeoutMs: number;
  idleTimeoutMs: number;
  pingIntervalMs: number;
  outputSampleRate: number;
  frameDurationMs: number;
  createConversation: ConversationFactory;
  /** False while draining: new connections are refused with 503. */
  accepting: () => boolean;
  /** Concurrent sessions allowed (0: no limit); a device replacing its own session always fits. */
  maxSessions: number;
  /** Load-based admission (event-loop delay, media queue); absent: only maxSessions limits. */
  admission?: AdmissionGate;
  /** `Retry-After` (seconds) on 503 refusals for capacity and overload. */
  retryAfterS: number;
  /** Bytes queued for a device beyond which it counts as not reading (closed with 4007). */
  maxOutputBufferBytes: number;
  /** Control messages per connection. */
  controlRate: RateLimit;
  /** Concurrent sessions from one address (`addressKey`); 0: no limit. */
  maxSessionsPerIp: number;
  /** Upgrade attempts per address: anonymous ones together, each credentialed device on its own. */
  upgradeRate: RateLimit;
  /** Told about every refused upgrade (metrics). */
  onRefused?: (reason: WsRefusalReason) => void;
  /** Told about every session opened; `ended` aborts when it ends (the store's device records and live sessions). */
  onSessionOpened?: (s: { sessionId: string; deviceId: string | null; clientId: string | null }, ended: AbortSignal) => void;
}

/** Why a device's WebSocket upgrade was refused (the metric's `reason` label). */
export type WsRefusalReason = 'unauthorized' | 'capacity' | 'draining' | 'overloaded' | 'per_ip';

function queryOf(request: FastifyRequest): URLSearchParams {
  const i = request.url.indexOf('?');
  return new URLSearchParams(i >= 0 ? request.url.slice(i + 1) : '');
}

/** Who may replace whom: the Device-Id + Client-Id pair (a MAC alone is not an identity). */
export function identityKey(identity: { deviceId: string | null; clientId: string | null }): string | null {
  return identity.deviceId ? pairKey(identity.deviceId, identity.clientId ?? '') : null;
}

function toBytes(data: RawData): Uint8Array {
  if (Array.isArray(data)) return Buffer.concat(data);
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  return data;
}

export async function deviceWsRoute(app: FastifyInstance, opts: WsRouteOptions): Promise<void> {
  // A storm of refused devices (or an attacker) must not flood the log: one line per second per
  // kind of refusal, carrying how many were not logged since the last one.
  const refusals = createLogRateLimit({ perSecond: 1, burst: 1 });
  const warnRefused = (log: FastifyRequest['log'], fields: Record<string, unknown>, msg: string): void => refusals.wrap(log).warn(fields, msg);
  const perIp = new PerIpLimits(opts.upgradeRate);
  const refusedOrigin = createOriginCheck(opts.allowedOrigins, 'WebSocket');
  const preValidation = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    if (!opts.accepting()) {
      opts.onRefused?.('draining');
      await reply.code(503).send({ error: 'server is shutting down' });
      return;
    }
    const fix = refusedOrigin(request);
    if (fix !== null) {
      opts.onRefused?.('unauthorized');
      await reply.code(403).send({ error: 'origin not allowed', fix });
      return;
    }
    // The credential is checked first (synchronous, no I/O): an upgrade presenting a valid one
    // spends its own budget per address and device, so strangers flooding a shared address (a
    // home or carrier NAT) cannot lock its real devices out. Anything else (no credential, or a
    // wrong one) spends the address's anonymous budget and is refused there before any more work
    // is done for it (without this, 300 sessions from one IP were accepted).
    const address = addressKey(request);
    const identity = readIdentity(request.headers, queryOf(request));
    let decision = authorize(identity, opts.auth);
    const credentialed = decision.ok && opts.auth.mode !== 'open';
    const budget = credentialed ? perIp.takeAuthenticatedUpgrade(address, identityKey(identity) ?? '') : perIp.takeUpgrade(address);
    if (!budget) {
      warnRefused(request.log, { remote: clientAddress(request), credentialed }, 'device refused: upgrade rate per IP');
      opts.onRefused?.('per_ip');
      await reply.code(429).header('retry-after', String(opts.retryAfterS)).send({ error: 'too many connection attempts' });
      return;
    }
    if (opts.maxSessionsPerIp > 0 && perIp.sessions(address) >= opts.maxSessionsPerIp) {
      warnRefused(request.log, { remote: clientAddress(request), limit: opts.maxSessionsPerIp }, 'device refused: sessions per IP');
      opts.onRefused?.('per_ip');
      await reply.code(429).header('retry-after', String(opts.retryAfterS)).send({ error: 'too many sessions from this address' });
      return;
    }
    // Asked only after the anonymous budget is spent: wrong tokens cannot make the database work
    // faster than an address may try to connect.
    if (!decision.ok && decision.stored && opts.auth.verifyStoredDevice) {
      const { deviceId, clientId, token } = decision.stored;
      if (await opts.auth.verifyStoredDevice(deviceId, clientId, token)) decision = { ok: true };
    }
    if (!decision.ok) {
      request.log.warn({ deviceId: identity.deviceId, reason: decision.reason }, 'device refused');
      opts.onRefused?.('unauthorized');
      // The same answer for every failed check: a stranger learns nothing (e.g. which MACs are allowed).
      await reply.code(401).send({ error: 'unauthorized' });
      return;
    }
    // A device replacing its own session adds no load: it fits the budget and passes admission.
    const key = identityKey(identity);
    const replacing = key !== null && opts.registry.byIdentity(key) !== undefined;
    if (replacing) return;
    if (opts.maxSessions > 0 && opts.registry.size >= opts.maxSessions) {
      warnRefused(request.log, { deviceId: identity.deviceId, sessions: opts.registry.size, maxSessions: opts.maxSessions }, 'device refused: server at capacity');
      opts.onRefused?.('capacity');
      await reply.code(503).header('retry-after', String(opts.retryAfterS)).send({ error: 'server at capacity' });
      return;
    }
    const verdict = opts.admission?.check();
    if (verdict && !verdict.ok) {
      warnRefused(request.log, { deviceId: identity.deviceId, signal: verdict.signal, value: verdict.value, limit: verdict.limit }, 'device refused: server overloaded');
      opts.onRefused?.('overloaded');
      await reply.code(503).header('retry-after', String(opts.retryAfterS)).send({ error: 'server overloaded', reason: verdict.signal });
    }
  };

  const handler = (socket: WebSocket, request: FastifyRequest): void => {
    const identity = readIdentity(request.headers, queryOf(request));
    const sessionId = randomUUID();
    const log = request.log.child({ sessionId, deviceId: identity.deviceId ?? undefined });
    // The channel frames audio for the version the hello negotiates, which is known only later.
    const holder: { session?: DeviceSession } = {};
    const channel = new WsDeviceChannel(socket, () => holder.session?.protocolVersion ?? 1, {
      maxBufferedBytes: opts.maxOutputBufferBytes,
      onOverflow: (bufferedBytes) => {
        log.warn({ bufferedBytes, limit: opts.maxOutputBufferBytes }, 'output buffer over limit: closing');
        holder.session?.close(CloseCode.SlowReader);
      },
    });
    const s = new DeviceSession({
      sessionId,
      deviceId: identity.deviceId,
      clientId: identity.clientId,
      headerProtocolVersion: identity.protocolVersion,
      channel,
      log,
      helloTimeoutMs: opts.helloTimeoutMs,
      idleTimeoutMs: opts.idleTimeoutMs,
      outputSampleRate: opts.outputSampleRate,
      frameDurationMs: opts.frameDurationMs,
      createConversation: opts.createConversation,
      controlRate: opts.controlRate,
      onEnded: (ended) => opts.registry.remove(ended),
    });
    holder.session = s;
    opts.registry.add(s, identityKey(identity));
    const address = addressKey(request);
    perIp.opened(address);
    s.signal.addEventListener('abort', () => perIp.closed(address), { once: true });
    opts.onSessionOpened?.({ sessionId, deviceId: identity.deviceId, clientId: identity.clientId }, s.signal);
    log.info({ clientId: identity.clientId, protocolVersion: identity.protocolVersion, remote: clientAddress(request) }, 'device connected');

    socket.on('message', (data: RawData, isBinary: boolean) => {
      if (isBinary) s.handleBinary(toBytes(data));
      else s.handleText(toBytes(data).toString());
    });
    socket.on('close', (code: number) => s.handleClosed(code));
    socket.on('error', (err: Error) => {
      // ws reports oversize frames and protocol violations here, then closes the socket.
      log.warn({ err: err.message }, 'websocket error');
    });
    if (opts.pingIntervalMs > 0) {
      const timer = setInterval(() => {
        if (socket.readyState === 1) socket.ping();
      }, opts.pingIntervalMs);
      s.signal.addEventListener('abort', () => clearInterval(timer), { once: true });
    }
  };

  app.get(DEVICE_WS_PATH, { websocket: true, preValidation }, handler);
  // The firmware uses the URL as given; accept it without the trailing slash too.
  app.get(DEVICE_WS_PATH.slice(0, -1), { websocket: true, preValidation }, handler);
}
