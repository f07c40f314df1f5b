/**
 * @module The firmware's MQTT+UDP transport, server side: an embedded MQTT broker (aedes) for the
 * JSON and one UDP socket for the audio. Devices connect with the per-device credentials OTA
 * handed out (credentials.ts); the broker delivers to each client directly (the firmware
 * subscribes to nothing, so subscriptions are refused) and accepts publishes only to the
 * configured topic. Each connection is a MqttDeviceLink; each hello on it a DeviceSession in the
 * shared SessionRegistry, so the voice pipeline, the admin API and push see it like a WebSocket
 * session. Everything a stranger can send is bounded: connections (in all; per address, those
 * without CONNECT apart from devices, connection-gate.ts; time to CONNECT), packet size, QoS and
 * retain, publishes per connection, datagram size.
 */
import { readFileSync } from 'node:fs';
import { createServer as createTcpServer, type Socket } from 'node:net';
import { createSecureContext, TLSSocket } from 'node:tls';
import { Aedes, type AuthenticateError, type Client } from 'aedes';
import type { Logger } from '../../core/logger.ts';
import { createLogRateLimit } from '../../core/log-rate-limit.ts';
import { makeRoom } from '../../core/bounded-map.ts';
import type { RateLimit } from '../../core/token-bucket.ts';
import { pairKey } from '../../store/pair-key.ts';
import type { DeviceRegistry } from '../../store/identity-registry-types.ts';
import type { AdmissionGate } from '../admission.ts';
import { AddressKeys, type AddressSettings } from '../../core/address-key.ts';
import { PerIpLimits } from '../../core/per-ip-limits.ts';
import { parseIp, formatIp } from '../../core/ip-address.ts';
import { identityKey, type WsRouteOptions } from '../http/ws-route.ts';
import type { IdleDeviceLink, IdleDeviceLinks } from '../../features/push/index.ts';
import type { ConversationFactory } from '../../voice/session/conversation.ts';
import type { SessionRegistry } from '../../voice/session/registry.ts';
import { DeviceSession } from '../../voice/session/session.ts';
import { checkMqttCredentials, checkStoredMqttCredentials, MAX_MQTT_CLIENT_ID_CHARS, mqttCredentials, type MqttAuthPolicy } from './credentials.ts';
import { ConnectionGate, type GateTicket } from './connection-gate.ts';
import { MqttDeviceLink, type LinkContext } from './device-link.ts';
import { limitConnection } from './packet-limit.ts';
import { UdpAudio, type UdpDropReason } from './udp-audio.ts';

/** Longest wait for an accepted CONNECT (TLS handshake included) after the TCP connection opens. */
const CONNECT_TIMEOUT_MS = 10_000;
/** The same for an address with half its pending connections (`mqtt.maxPendingPerAddress`) taken. */
const PRESSURED_CONNECT_TIMEOUT_MS = 2_000;

export interface MqttSettings {
  host: string;
  port: number;
  tlsCert: string;
  tlsKey: string;
  publicEndpoint: string;
  udpPort: number;
  udpPublicHost: string;
  keepaliveS: number;
  publishTopic: string;
  maxConnections: number;
  maxPendingPerAddress: number;
  maxPacketBytes: number;
}

export interface MqttTransportOptions {
  mqtt: MqttSettings;
  log: Logger;
  registry: SessionRegistry;
  createConversation: ConversationFactory;
  auth: MqttAuthPolicy;
  /** Revocations (the store's registry): a revoked pair is disconnected. */
  devices?: Pick<DeviceRegistry, 'onRevoked'>;
  /** The same hook the WebSocket route calls for each session (device records, live sessions). */
  onSessionOpened?: WsRouteOptions['onSessionOpened'];
  admission?: AdmissionGate;
  /** Per-address keys as every other limit counts them (no proxy stands in front of the broker). */
  address: AddressSettings;
  session: { helloTimeoutMs: number; idleTimeoutMs: number; outputSampleRate: number; frameDurationMs: number; maxSessions: number };
  controlRate: RateLimit;
  /** Authenticated connections per address (`server.maxSessionsPerIp`); 0: no limit. Those without CONNECT count apart (`mqtt.maxPendingPerAddress`). */
  maxConnectionsPerAddress: number;
  /** The CONNECT deadlines (tests); default 10 s, 2 s under pressure. */
  connectDeadlines?: { normalMs: number; pressuredMs: number };
  /** CONNECTs with valid credentials per address and device (`server.upgradeRate`). */
  connectRate: RateLimit;
  /** Told about each dropped datagram and refused connection (metrics). */
  onUdpDrop?: (reason: UdpDropReason) => void;
}

/** The OTA `mqtt` section for the embedded broker. */
export interface MqttOtaSection {
  endpoint: string;
  client_id: string;
  username: string;
  password: string;
  keepalive: number;
  publish_topic: string;
  [key: string]: string | number;
}

export interface MqttTransport extends IdleDeviceLinks {
  /** Bound ports (the configured ones, or what port 0 picked). */
  readonly ports: { mqtt: number; udp: number };
  /** Connected devices and open audio sessions. */
  stats(): { connections: number; devices: number; audioSessions: number };
  /**
   * The OTA section for a pair: the endpoint (`mqtt.publicEndpoint`, else `host` with the broker's
   * port) and credentials; `generation` null in open mode.
   */
  otaSection(ctx: { deviceId: string; clientId: string; generation: number | null; host: string }): MqttOtaSection;
  /** Draining: hellos are no longer answered (connections stay until close). */
  stopAccepting(): void;
  /** Ends every session (with a goodbye) and connection, closes the broker and both sockets. */
  close(): Promise<void>;
}

/** The host part of `host:port` (IPv6 in brackets allowed). */
function hostOf(endpoint: string): string {
  const m = /^\[([^\]]+)\](?::\d+)?$/.exec(endpoint);
  if (m) return m[1] ?? '';
  const i = endpoint.lastIndexOf(':');
  return i > 0 && endpoint.indexOf(':') === i ? endpoint.slice(0, i) : endpoint;
}

export async function startMqttTransport(opts: MqttTransportOptions): Promise<MqttTransport> {
  const { mqtt, log } = opts;
  const refusals = createLogRateLimit({ perSecond: 1, burst: 3 });
  const warn = refusals.wrap(log);
  const keys = new AddressKeys(opts.address);
  const perAddress = new PerIpLimits(opts.connectRate);
  const audio = new UdpAudio({ host: mqtt.host, port: mqtt.udpPort, log, ...(opts.onUdpDrop ? { onDrop: opts.onUdpDrop } : {}) });
  const gate = new ConnectionGate({
    maxPendingPerAddress: mqtt.maxPendingPerAddress,
    maxAuthenticatedPerAddress: opts.maxConnectionsPerAddress,
    connectTimeoutMs: opts.connectDeadlines?.normalMs ?? CONNECT_TIMEOUT_MS,
    pressuredConnectTimeoutMs: opts.connectDeadlines?.pressuredMs ?? PRESSURED_CONNECT_TIMEOUT_MS,
    onClose: (address, why) =>
      warn.warn({ address, limit: mqtt.maxPendingPerAddress }, why === 'evicted' ? 'MQTT connection closed: too many connections without CONNECT from its address (the oldest goes)' : 'MQTT connection closed: no CONNECT in time'),
  });
  /** The socket, address key and gate ticket under each stream the broker reads. */
  const conns = new WeakMap<object, { socket: Socket; address: string; remote: string; ticket: GateTicket }>();
  const pairs = new WeakMap<Client, { deviceId: string; clientId: string }>();
  const linkByClient = new WeakMap<Client, MqttDeviceLink>();
  const links = new Map<string, MqttDeviceLink>();
  const byDevice = new Map<string, Set<MqttDeviceLink>>();
  const listeners = new Set<(link: IdleDeviceLink) => void>();
  const sockets = new Set<Socket>();
  /** The endpoint host OTA handed each pair (most recent last; bounded like every map strangers fill). */
  const endpointHosts = new Map<string, string>();
  let accepting = true;
  let closing = false;

  const ctx: LinkContext = {
    audio,
    downlinkTopic: 'devices/p2p',
    controlRate: opts.controlRate,
    udpServerFor: (link, localAddress) => {
      if (mqtt.udpPublicHost) return mqtt.udpPublicHost;
      if (mqtt.publicEndpoint) return hostOf(mqtt.publicEndpoint);
      // The host OTA told this device to reach the broker at: it reaches us there (behind a
      // container's port mapping too, where the socket's local address is the container's).
      const told = endpointHosts.get(pairKey(link.deviceId, link.clientId));
      if (told) return told;
      const ip = localAddress ? parseIp(localAddress) : null;
      return ip ? formatIp(ip) : (localAddress ?? '127.0.0.1');
    },
    openSession: (link, sessionId, channel, sessionLog) => {
      if (!accepting) {
        warn.warn({ deviceId: link.deviceId }, 'MQTT hello refused: server is shutting down');
        return null;
      }
      const key = identityKey(link);
      const replacing = key !== null && opts.registry.byIdentity(key) !== undefined;
      if (!replacing && opts.session.maxSessions > 0 && opts.registry.size >= opts.session.maxSessions) {
        warn.warn({ deviceId: link.deviceId, sessions: opts.registry.size }, 'MQTT hello refused: server at capacity');
        return null;
      }
      const verdict = replacing ? undefined : opts.admission?.check();
      if (verdict && !verdict.ok) {
        warn.warn({ deviceId: link.deviceId, signal: verdict.signal }, 'MQTT hello refused: server overloaded');
        return null;
      }
      const s = new DeviceSession({
        sessionId,
        deviceId: link.deviceId,
        clientId: link.clientId,
        headerProtocolVersion: null,
        channel,
        log: sessionLog,
        helloTimeoutMs: opts.session.helloTimeoutMs,
        idleTimeoutMs: opts.session.idleTimeoutMs,
        outputSampleRate: opts.session.outputSampleRate,
        frameDurationMs: opts.session.frameDurationMs,
        createConversation: opts.createConversation,
        // No controlRate here: the link's own budget covers every message of the connection, hellos included.
        onEnded: (ended) => opts.registry.remove(ended),
      });
      opts.registry.add(s, key);
      opts.onSessionOpened?.({ sessionId, deviceId: link.deviceId, clientId: link.clientId }, s.signal);
      return s;
    },
  };

  const broker = await Aedes.createBroker({
    id: 'xiaozhi',
    connectTimeout: CONNECT_TIMEOUT_MS,
    maxClientsIdLength: MAX_MQTT_CLIENT_ID_CHARS,
    // Keepalive 0 (none) would let a half-open connection live for ever; the firmware uses what OTA says.
    keepaliveLimit: Math.max(3600, mqtt.keepaliveS),
    // Packets queued before CONNECT is answered, and inbound QoS 2 held: both bounded small.
    queueLimit: 16,
    maxInflightInbound: 4,
    maxTopicLevels: 8,
    // The firmware sets no will; one would be published (and handled as the device's message) on
    // an abnormal close, after the link is gone.
    preConnect: (_client, packet, done) => (packet.will ? done(new Error('will messages are not offered'), false) : done(null, true)),
    authenticate: async (client, username, password, done) => {
      const conn = conns.get(client.conn);
      let decision = checkMqttCredentials(client.id ?? '', username, password, opts.auth);
      const refuse = (code: number, reason: string): void => {
        warn.warn({ clientId: String(client.id ?? '').slice(0, MAX_MQTT_CLIENT_ID_CHARS), remote: conn?.remote, reason }, 'MQTT connection refused');
        const err = new Error(reason) as AuthenticateError;
        (err as { returnCode: number }).returnCode = code;
        done(err, false);
      };
      // As the WebSocket upgrade: valid credentials of a mode that binds devices spend their own
      // budget per address and device (a device reconnecting in a loop spends only its own, never
      // its neighbours'); anything else, failed CONNECTs and open mode's credentials (OTA hands
      // them to anyone), spends the address's shared budget, so no address can CONNECT at line rate.
      const credentialed = decision.ok && opts.auth.mode !== 'open';
      if (conn && !(credentialed && decision.ok ? perAddress.takeAuthenticatedUpgrade(conn.address, pairKey(decision.deviceId, decision.clientId)) : perAddress.takeUpgrade(conn.address))) {
        return refuse(3, 'connect rate per address');
      }
      if (!decision.ok && decision.stored && password) {
        // Asked only after the address's budget is spent: wrong passwords cannot make the
        // database work faster than an address may CONNECT.
        const stored = await checkStoredMqttCredentials(client.id ?? '', password, opts.auth);
        if (stored.ok) decision = stored;
      }
      if (!decision.ok) return refuse(4, decision.reason);
      // Only now does the connection count against the address's limit (a device reconnecting
      // replaces its own connection, so it is let in at the limit too).
      const admitted = conn ? gate.authenticate(conn.ticket, links.has(pairKey(decision.deviceId, decision.clientId))) : 'authenticated';
      if (admitted === 'full') return refuse(3, 'connections per address');
      if (admitted === 'gone') {
        // Closed while the database answered (the gate said why): nothing to refuse or log.
        const err = new Error('connection closed') as AuthenticateError;
        (err as { returnCode: number }).returnCode = 3;
        return done(err, false);
      }
      pairs.set(client, { deviceId: decision.deviceId, clientId: decision.clientId });
      done(null, true);
    },
    // The firmware subscribes to nothing (the broker delivers to each client directly): every
    // subscription is answered as failed (0x80), so nothing a client sends reaches another.
    authorizeSubscribe: (_client, _sub, done) => done(null, null),
    authorizePublish: (client, packet, done) => {
      if (!client) return done(new Error('no publishing without a client'));
      if (packet.topic !== mqtt.publishTopic) return done(new Error('publish topic not allowed'));
      if (packet.retain || packet.qos > 1) return done(new Error('retain and QoS 2 are not offered'));
      linkOf(client)?.handleMessage(Buffer.isBuffer(packet.payload) ? packet.payload : Buffer.from(packet.payload));
      // Handled here: nothing subscribes, so the broker's own delivery has no one to reach.
      done(null);
    },
  });

  /**
   * The link of an authenticated client, made once CONNACK is written: the broker handles what the
   * client publishes from then on, before it reports the client ready, and the firmware publishes
   * its hello the moment its CONNECT returns.
   */
  const linkOf = (client: Client): MqttDeviceLink | undefined => {
    const pair = pairs.get(client);
    if (!pair) return undefined;
    // A client has one link for its life, even once a newer connection of the pair displaced it.
    const made = linkByClient.get(client);
    if (made) return made;
    const key = pairKey(pair.deviceId, pair.clientId);
    const conn = conns.get(client.conn);
    if (!conn || closing || client.closed) {
      client.close();
      return undefined;
    }
    // `log` already says `transport: mqtt` (transport-for-config.ts): a second binding would repeat the key on every line.
    const linkLog = log.child({ deviceId: pair.deviceId, clientId: pair.clientId });
    const link = new MqttDeviceLink(client, conn.socket, pair.deviceId, pair.clientId, ctx, linkLog);
    linkByClient.set(client, link);
    const old = links.get(key);
    if (old && old.client !== client) old.handleDisconnected();
    links.set(key, link);
    let set = byDevice.get(pair.deviceId);
    if (!set) byDevice.set(pair.deviceId, (set = new Set()));
    if (old) set.delete(old);
    set.add(link);
    linkLog.info({ remote: conn.remote }, 'device connected over MQTT');
    for (const l of listeners) {
      try {
        l(link);
      } catch (err) {
        linkLog.error({ err }, 'onConnected listener failed');
      }
    }
    return link;
  };
  broker.on('connackSent', (_packet, client) => void linkOf(client));
  broker.on('clientReady', (client) => {
    if (!linkOf(client)) client.close();
  });

  broker.on('clientDisconnect', (client) => {
    const pair = pairs.get(client);
    if (!pair) return;
    const key = pairKey(pair.deviceId, pair.clientId);
    const link = links.get(key);
    if (!link || link.client !== client) return;
    link.handleDisconnected();
    links.delete(key);
    const set = byDevice.get(pair.deviceId);
    set?.delete(link);
    if (set?.size === 0) byDevice.delete(pair.deviceId);
    link.log.info('device disconnected from MQTT');
  });
  broker.on('clientError', (client, err) => log.debug({ clientId: String(client.id).slice(0, MAX_MQTT_CLIENT_ID_CHARS), err: err.message }, 'MQTT client error'));
  broker.on('connectionError', (_client, err) => log.debug({ err: err.message }, 'MQTT connection error'));

  opts.devices?.onRevoked((gone) => {
    for (const d of gone) links.get(pairKey(d.deviceId, d.clientId))?.revoke();
  });

  const tls = mqtt.tlsCert !== '' && mqtt.tlsKey !== '';
  const secureContext = tls ? createSecureContext({ cert: readFileSync(mqtt.tlsCert), key: readFileSync(mqtt.tlsKey) }) : undefined;

  /** The broker reads `socket` (TCP, or TLS once its handshake is done). */
  const handle = (socket: Socket, address: string, remote: string, ticket: GateTicket): void => {
    // A device that lost power leaves a half-open connection: TCP keepalive finds it.
    socket.setKeepAlive(true, 60_000);
    socket.setNoDelay(true);
    const stream = limitConnection(socket, mqtt.maxPacketBytes, () => warn.warn({ remote, limit: mqtt.maxPacketBytes }, 'MQTT connection closed: packet over the size limit'));
    conns.set(stream, { socket, address, remote, ticket });
    broker.handle(stream);
  };

  const onConnection = (raw: Socket): void => {
    if (closing) {
      raw.destroy();
      return;
    }
    const address = keys.key(raw.remoteAddress, undefined);
    const remote = raw.remoteAddress ?? 'unknown';
    // TLS is wrapped here rather than by a TLS server, so the handshake is pending time too:
    // the gate's deadline and per-address bound cover a connection from its first byte.
    const socket = secureContext ? new TLSSocket(raw, { isServer: true, secureContext }) : raw;
    const ticket = gate.admit(socket, address);
    sockets.add(socket);
    socket.once('close', () => {
      gate.release(ticket);
      sockets.delete(socket);
    });
    if (socket instanceof TLSSocket) {
      socket.on('error', () => socket.destroy());
      socket.once('secure', () => handle(socket, address, remote, ticket));
    } else {
      handle(socket, address, remote, ticket);
    }
  };

  const server = createTcpServer(onConnection);
  server.maxConnections = mqtt.maxConnections;
  server.on('error', (err) => log.error({ err: err.message }, 'MQTT server error'));
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(mqtt.port, mqtt.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    await audio.listen();
  } catch (err) {
    server.close();
    await audio.close();
    await new Promise<void>((resolve) => broker.close(() => resolve()));
    throw err;
  }
  const address = server.address();
  const ports = { mqtt: typeof address === 'object' && address ? address.port : mqtt.port, udp: audio.port };
  // The firmware prefers `mqtt` over `websocket` whenever OTA offers it: the operator must know
  // that devices leave the WebSocket, and that both ports have to be reachable (TCP alone lets a
  // device connect and say hello, and then no audio flows).
  log.info(
    { mqtt: `${mqtt.host}:${ports.mqtt}`, udp: ports.udp, tls, open: [`${ports.mqtt}/tcp`, `${ports.udp}/udp`] },
    `MQTT broker and UDP audio listening: open TCP ${ports.mqtt}${tls ? ' (TLS)' : ''} and UDP ${ports.udp} to the devices; devices offered mqtt at OTA move from the WebSocket to MQTT`,
  );

  const find = (deviceId: string, clientId?: string): MqttDeviceLink | undefined => {
    if (clientId !== undefined) return links.get(pairKey(deviceId, clientId));
    const set = byDevice.get(deviceId.toLowerCase());
    let latest: MqttDeviceLink | undefined;
    for (const l of set ?? []) latest = l;
    return latest;
  };

  return {
    ports,
    find,
    onConnected(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    stats: () => ({ connections: broker.connectedClients, devices: links.size, audioSessions: audio.sessions }),
    otaSection: ({ deviceId, clientId, generation, host }) => {
      if (!mqtt.publicEndpoint) {
        const key = pairKey(deviceId, clientId);
        endpointHosts.delete(key);
        makeRoom(endpointHosts, Math.max(1000, mqtt.maxConnections));
        endpointHosts.set(key, host);
      }
      return {
        endpoint: mqtt.publicEndpoint || `${host}:${ports.mqtt}`,
        ...mqttCredentials(opts.auth.secret(), deviceId, clientId, generation),
        keepalive: mqtt.keepaliveS,
        publish_topic: mqtt.publishTopic,
      };
    },
    stopAccepting: () => {
      accepting = false;
    },
    close: async () => {
      if (closing) return;
      closing = true;
      accepting = false;
      const ending: Promise<void>[] = [];
      for (const link of [...links.values()]) {
        const s = link.session;
        if (s) ending.push(s.closed);
        link.close();
      }
      links.clear();
      byDevice.clear();
      await Promise.all(ending);
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Connections that never sent CONNECT would hold the server open until their timeout.
      for (const socket of sockets) socket.destroy();
      gate.close();
      await closed;
      await new Promise<void>((resolve) => broker.close(() => resolve()));
      await audio.close();
    },
  };
}
