/**
 * @module The embedded broker (aedes) as the firmware needs it and no more: CONNECT checked
 * against the per-device credentials (credentials.ts) within the address's budgets, no wills, no
 * subscriptions (the server publishes to each client directly), publishes only to the configured
 * topic at QoS 0 or 1 without retain, each handed to the client's link.
 */
import { Aedes, type AedesOptions, type AuthenticateError, type Client } from 'aedes';
import type { Logger } from '../../core/logger.ts';
import type { PerIpLimits } from '../../core/per-ip-limits.ts';
import { pairKey } from '../../store/pair-key.ts';
import type { SessionDoor } from '../session-door/index.ts';
import type { ConnectionGate } from './connection-gate.ts';
import {
  checkMqttCredentials,
  checkStoredMqttCredentials,
  MAX_MQTT_CLIENT_ID_CHARS,
  type MqttAuthPolicy,
} from './credentials.ts';
import type { BrokerConnections, MqttLinks } from './link-table.ts';

/** Longest wait for an accepted CONNECT (TLS handshake included) after the TCP connection opens. */
export const CONNECT_TIMEOUT_MS = 10_000;

export interface BrokerParts {
  /** `mqtt.keepaliveS` and `mqtt.publishTopic`. */
  settings: { keepaliveS: number; publishTopic: string };
  auth: MqttAuthPolicy;
  conns: BrokerConnections;
  links: MqttLinks;
  gate: ConnectionGate;
  /** CONNECT budgets per address (and device). */
  perAddress: PerIpLimits;
  /** Where refused CONNECTs are counted. */
  sessions: Pick<SessionDoor, 'refused'>;
  log: Logger;
  /** `log`, rate-limited: every refusal line a stranger can cause goes here. */
  warn: Logger;
}

/** A refusal for aedes: the CONNACK return code the client gets. */
function connackError(code: number, reason: string): AuthenticateError {
  const err = new Error(reason) as AuthenticateError;
  (err as { returnCode: number }).returnCode = code;
  return err;
}

/** CONNECT: credentials, the address's budgets, then the pair is known to the link table. */
function authenticator(parts: BrokerParts): NonNullable<AedesOptions['authenticate']> {
  const { auth, conns, gate, perAddress, links, warn } = parts;
  return async (client, username, password, done) => {
    const conn = conns.get(client.conn);
    let decision = checkMqttCredentials(client.id ?? '', username, password, auth);
    const refuse = (code: number, reason: string, counted: 'per_ip' | 'unauthorized'): void => {
      warn.warn(
        { clientId: String(client.id ?? '').slice(0, MAX_MQTT_CLIENT_ID_CHARS), remote: conn?.remote, reason },
        'MQTT connection refused',
      );
      parts.sessions.refused(counted);
      done(connackError(code, reason), false);
    };
    // As the WebSocket upgrade: valid credentials of a mode that binds devices spend their own
    // budget per address and device (a device reconnecting in a loop spends only its own, never
    // its neighbours'); anything else, failed CONNECTs and open mode's credentials (OTA hands
    // them to anyone), spends the address's shared budget, so no address can CONNECT at line rate.
    const credentialed = decision.ok && auth.mode !== 'open';
    if (
      conn &&
      !(credentialed && decision.ok
        ? perAddress.takeAuthenticatedUpgrade(conn.address, pairKey(decision.deviceId, decision.clientId))
        : perAddress.takeUpgrade(conn.address))
    ) {
      return refuse(3, 'connect rate per address', 'per_ip');
    }
    if (!decision.ok && decision.stored && password) {
      // Asked only after the address's budget is spent: wrong passwords cannot make the
      // database work faster than an address may CONNECT.
      const stored = await checkStoredMqttCredentials(client.id ?? '', password, auth);
      if (stored.ok) decision = stored;
    }
    if (!decision.ok) return refuse(4, decision.reason, 'unauthorized');
    // Only now does the connection count against the address's limit (a device reconnecting
    // replaces its own connection, so it is let in at the limit too).
    const admitted = conn
      ? gate.authenticate(conn.ticket, links.has(decision.deviceId, decision.clientId))
      : 'authenticated';
    if (admitted === 'full') return refuse(3, 'connections per address', 'per_ip');
    // Closed while the database answered (the gate said why): nothing to refuse or log.
    if (admitted === 'gone') return done(connackError(3, 'connection closed'), false);
    links.authenticated(client, { deviceId: decision.deviceId, clientId: decision.clientId });
    done(null, true);
  };
}

/** The broker, its checks and its events wired to the link table. */
export async function createBroker(parts: BrokerParts): Promise<Aedes> {
  const { settings, links, log } = parts;
  const broker = await Aedes.createBroker({
    id: 'xiaozhi',
    connectTimeout: CONNECT_TIMEOUT_MS,
    maxClientsIdLength: MAX_MQTT_CLIENT_ID_CHARS,
    // Keepalive 0 (none) would let a half-open connection live for ever; the firmware uses what OTA says.
    keepaliveLimit: Math.max(3600, settings.keepaliveS),
    // Packets queued before CONNECT is answered, and inbound QoS 2 held: both bounded small.
    queueLimit: 16,
    maxInflightInbound: 4,
    maxTopicLevels: 8,
    // The firmware sets no will; one would be published (and handled as the device's message) on
    // an abnormal close, after the link is gone.
    preConnect: (_client, packet, done) =>
      packet.will ? done(new Error('will messages are not offered'), false) : done(null, true),
    authenticate: authenticator(parts),
    // The firmware subscribes to nothing (the broker delivers to each client directly): every
    // subscription is answered as failed (0x80), so nothing a client sends reaches another.
    authorizeSubscribe: (_client, _sub, done) => done(null, null),
    authorizePublish: (client, packet, done) => {
      if (!client) return done(new Error('no publishing without a client'));
      if (packet.topic !== settings.publishTopic) return done(new Error('publish topic not allowed'));
      if (packet.retain || packet.qos > 1) return done(new Error('retain and QoS 2 are not offered'));
      links
        .linkOf(client)
        ?.handleMessage(Buffer.isBuffer(packet.payload) ? packet.payload : Buffer.from(packet.payload));
      // Handled here: nothing subscribes, so the broker's own delivery has no one to reach.
      done(null);
    },
  });
  broker.on('connackSent', (_packet, client) => void links.linkOf(client));
  broker.on('clientReady', (client: Client) => {
    if (!links.linkOf(client)) client.close();
  });
  broker.on('clientDisconnect', (client) => links.disconnected(client));
  broker.on('clientError', (client, err) =>
    log.debug(
      { clientId: String(client.id).slice(0, MAX_MQTT_CLIENT_ID_CHARS), err: err.message },
      'MQTT client error',
    ),
  );
  broker.on('connectionError', (_client, err) => log.debug({ err: err.message }, 'MQTT connection error'));
  return broker;
}
