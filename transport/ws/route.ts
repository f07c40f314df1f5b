/**
 * @module The device WebSocket endpoint (`/xiaozhi/v1/`). Authorization and admission happen
 * before the upgrade completes (a refused device gets HTTP 401, 429 or 503, never a socket); each
 * accepted connection becomes one DeviceSession, opened through the shared SessionDoor, with its
 * own child logger.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { RawData, WebSocket } from 'ws';
import {
  authorize,
  httpOriginOf,
  readIdentity,
  type AuthPolicy,
  type DeviceIdentity,
} from '../../features/identity/index.ts';
import type { DeviceSession } from '../../voice/session/session.ts';
import { WsDeviceChannel } from './channel.ts';
import { CloseCode } from '../../protocol/close-codes.ts';
import { createLogRateLimit } from '../../core/log-rate-limit.ts';
import type { RateLimit } from '../../core/token-bucket.ts';
import { PerIpLimits } from '../../core/per-ip-limits.ts';
import { addressKey, clientAddress } from '../../core/address-key.ts';
import { identityKey, type SessionDoor, type SessionRefusal } from '../session-door/index.ts';

export const DEVICE_WS_PATH = '/xiaozhi/v1/';

export interface WsRouteOptions {
  auth: AuthPolicy;
  /** The browser-origin check: what to tell a refused browser, or null (devices send no Origin). */
  refusedOrigin: (request: FastifyRequest) => string | null;
  /** Where sessions open: draining, capacity, load, the registry, the hooks, refusals counted. */
  sessions: SessionDoor;
  pingIntervalMs: number;
  /** `Retry-After` (seconds) on refusals for capacity, overload and the per-address limits. */
  retryAfterS: number;
  /** Bytes queued for a device beyond which it counts as not reading (closed with 4007). */
  maxOutputBufferBytes: number;
  /** Control messages per connection. */
  controlRate: RateLimit;
  /** Concurrent sessions from one address (`addressKey`); 0: no limit. */
  maxSessionsPerIp: number;
  /** Upgrade attempts per address: anonymous ones together, each credentialed device on its own. */
  upgradeRate: RateLimit;
}

function queryOf(request: FastifyRequest): URLSearchParams {
  const i = request.url.indexOf('?');
  return new URLSearchParams(i >= 0 ? request.url.slice(i + 1) : '');
}

function toBytes(data: RawData): Uint8Array {
  if (Array.isArray(data)) return Buffer.concat(data);
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  return data;
}

/** The HTTP answer to a refusal of the door. */
async function answerRefusal(reply: FastifyReply, refusal: SessionRefusal, retryAfterS: number): Promise<void> {
  if (refusal.reason === 'draining') {
    await reply.code(503).send({ error: refusal.error });
    return;
  }
  reply.code(503).header('retry-after', String(retryAfterS));
  await reply.send(
    refusal.reason === 'overloaded' ? { error: refusal.error, reason: refusal.signal } : { error: refusal.error },
  );
}

export async function deviceWsRoute(app: FastifyInstance, opts: WsRouteOptions): Promise<void> {
  const { sessions } = opts;
  // A storm of refused devices (or an attacker) must not flood the log: one line per second per
  // kind of refusal, carrying how many were not logged since the last one.
  const refusals = createLogRateLimit({ perSecond: 1, burst: 1 });
  const warnRefused = (log: FastifyRequest['log'], fields: Record<string, unknown>, msg: string): void =>
    refusals.wrap(log).warn(fields, msg);
  const perIp = new PerIpLimits(opts.upgradeRate);

  const tooMany = async (reply: FastifyReply, error: string): Promise<void> => {
    sessions.refused('per_ip');
    await reply.code(429).header('retry-after', String(opts.retryAfterS)).send({ error });
  };

  const preValidation = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const identity = readIdentity(request.headers, queryOf(request));
    const log = request.log.child({ deviceId: identity.deviceId });
    const draining = sessions.drainingRefusal(log);
    if (draining) return answerRefusal(reply, draining, opts.retryAfterS);
    const fix = opts.refusedOrigin(request);
    if (fix !== null) {
      sessions.refused('unauthorized');
      await reply.code(403).send({ error: 'origin not allowed', fix });
      return;
    }
    // The credential is checked first (synchronous, no I/O): an upgrade presenting a valid one
    // spends its own budget per address and device, so strangers flooding a shared address (a
    // home or carrier NAT) cannot lock its real devices out. Anything else (no credential, or a
    // wrong one) spends the address's anonymous budget and is refused there before any more work
    // is done for it (without this, 300 sessions from one IP were accepted).
    const address = addressKey(request);
    let decision = authorize(identity, opts.auth);
    const credentialed = decision.ok && opts.auth.mode !== 'open';
    const budget = credentialed
      ? perIp.takeAuthenticatedUpgrade(address, identityKey(identity) ?? '')
      : perIp.takeUpgrade(address);
    if (!budget) {
      warnRefused(request.log, { remote: clientAddress(request), credentialed }, 'device refused: upgrade rate per IP');
      return tooMany(reply, 'too many connection attempts');
    }
    // A device replacing its own session (it reconnected before we noticed the old connection
    // was dead) adds no session, here as at the server's budget; a wrong credential gains nothing.
    if (
      opts.maxSessionsPerIp > 0 &&
      perIp.sessions(address) >= opts.maxSessionsPerIp &&
      !(decision.ok && sessions.replaces(identity))
    ) {
      warnRefused(
        request.log,
        { remote: clientAddress(request), limit: opts.maxSessionsPerIp },
        'device refused: sessions per IP',
      );
      return tooMany(reply, 'too many sessions from this address');
    }
    // Asked only after the anonymous budget is spent: wrong tokens cannot make the database work
    // faster than an address may try to connect.
    if (!decision.ok && decision.stored && opts.auth.verifyStoredDevice) {
      const { deviceId, clientId, token } = decision.stored;
      if (await opts.auth.verifyStoredDevice(deviceId, clientId, token)) decision = { ok: true };
    }
    if (!decision.ok) {
      request.log.warn({ deviceId: identity.deviceId, reason: decision.reason }, 'device refused');
      sessions.refused('unauthorized');
      // The same answer for every failed check: a stranger learns nothing (e.g. which MACs are allowed).
      await reply.code(401).send({ error: 'unauthorized' });
      return;
    }
    const full = sessions.capacityRefusal(identity, log);
    if (full) return answerRefusal(reply, full, opts.retryAfterS);
  };

  /** The session of an accepted socket (and its logger), its per-address count, and the connection line. */
  const openSession = (
    socket: WebSocket,
    request: FastifyRequest,
    identity: DeviceIdentity,
  ): { s: DeviceSession; log: FastifyRequest['log'] } => {
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
    const s = sessions.open({
      sessionId,
      pair: identity,
      headerProtocolVersion: identity.protocolVersion,
      channel,
      log,
      controlRate: opts.controlRate,
      reachedAt: httpOriginOf(request),
    });
    holder.session = s;
    const address = addressKey(request);
    perIp.opened(address);
    s.signal.addEventListener('abort', () => perIp.closed(address), { once: true });
    log.info(
      { clientId: identity.clientId, protocolVersion: identity.protocolVersion, remote: clientAddress(request) },
      'device connected',
    );
    return { s, log };
  };

  /** Frames in, close and errors, and keep-alive pings until the session ends. */
  const attach = (socket: WebSocket, { s, log }: { s: DeviceSession; log: FastifyRequest['log'] }): void => {
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

  const handler = (socket: WebSocket, request: FastifyRequest): void => {
    attach(socket, openSession(socket, request, readIdentity(request.headers, queryOf(request))));
  };

  app.get(DEVICE_WS_PATH, { websocket: true, preValidation }, handler);
  // The firmware uses the URL as given; accept it without the trailing slash too.
  app.get(DEVICE_WS_PATH.slice(0, -1), { websocket: true, preValidation }, handler);
}
