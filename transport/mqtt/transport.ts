/**
 * @module The firmware's MQTT+UDP transport, server side: an embedded MQTT broker (aedes) for the
 * JSON and one UDP socket for the audio. Devices connect with the per-device credentials OTA
 * handed out (credentials.ts); the broker delivers to each client directly (the firmware
 * subscribes to nothing, so subscriptions are refused) and accepts publishes only to the
 * configured topic. Each connection is a MqttDeviceLink; each hello on it a DeviceSession opened
 * through the shared SessionDoor, so the voice pipeline, the admin API and push see it like a
 * WebSocket session. Everything a stranger can send is bounded: connections (in all; per address, those
 * without CONNECT apart from devices, connection-gate.ts; time to CONNECT), packet size, QoS and
 * retain, publishes per connection, datagram size.
 */
import type { Aedes } from 'aedes';
import type { Logger } from '../../core/logger.ts';
import { createLogRateLimit } from '../../core/log-rate-limit.ts';
import type { RateLimit } from '../../core/token-bucket.ts';
import { AddressKeys, type AddressSettings } from '../../core/address-key.ts';
import { PerIpLimits } from '../../core/per-ip-limits.ts';
import type { DeviceRegistry } from '../../store/identity-registry-types.ts';
import type { IdleDeviceLinks } from '../../features/push/index.ts';
import type { DeviceTransport, SessionDoor } from '../session-door/index.ts';
import { CONNECT_TIMEOUT_MS, createBroker } from './broker.ts';
import { ConnectionGate } from './connection-gate.ts';
import { mqttCredentials, type MqttAuthPolicy } from './credentials.ts';
import type { LinkContext, MqttDeviceLink } from './device-link.ts';
import { DeviceEndpoints } from './endpoints.ts';
import { MqttLinks, type BrokerConnections } from './link-table.ts';
import { listenForDevices, type DeviceListener } from './listener.ts';
import { UdpAudio, type UdpDropReason } from './udp-audio.ts';

/** The CONNECT deadline for an address with half its pending connections (`mqtt.maxPendingPerAddress`) taken. */
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
  /** Where each hello's session opens (draining, capacity, load, registry, hooks) and refusals are counted. */
  sessions: SessionDoor;
  auth: MqttAuthPolicy;
  /** Revocations (the store's registry): a revoked pair is disconnected. */
  devices?: Pick<DeviceRegistry, 'onRevoked'>;
  /** Per-address keys as every other limit counts them (no proxy stands in front of the broker). */
  address: AddressSettings;
  controlRate: RateLimit;
  /** Authenticated connections per address (`server.maxSessionsPerIp`); 0: no limit. Those without CONNECT count apart (`mqtt.maxPendingPerAddress`). */
  maxConnectionsPerAddress: number;
  /** The CONNECT deadlines (tests); default 10 s, 2 s under pressure. */
  connectDeadlines?: { normalMs: number; pressuredMs: number };
  /** CONNECTs with valid credentials per address and device (`server.upgradeRate`). */
  connectRate: RateLimit;
  /** Told about each dropped datagram (metrics). */
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

/**
 * The transport as the server sees it: push's `IdleDeviceLinks` too (the broker connection
 * outlives the audio sessions, so an idle device can be reached).
 */
export interface MqttTransport extends DeviceTransport, IdleDeviceLinks {
  /** Bound ports (the configured ones, or what port 0 picked). */
  readonly ports: { mqtt: number; udp: number };
  /** Connected devices and open audio sessions. */
  stats(): { connections: number; devices: number; audioSessions: number };
  /**
   * The OTA section for a pair: the endpoint (`mqtt.publicEndpoint`, else `host` with the broker's
   * port) and credentials; `generation` null in open mode.
   */
  otaSection(ctx: {
    deviceId: string;
    clientId: string;
    generation: number | null;
    host: string;
    hostIsOwn: boolean;
  }): MqttOtaSection;
  /** The device's broker connection here, if any (the pair when clientId is given). */
  find(deviceId: string, clientId?: string): MqttDeviceLink | undefined;
  /** Told when a device connects to the broker (queued messages are delivered then). Returns the unsubscribe. */
  onConnected(listener: (link: MqttDeviceLink) => void): () => void;
  /** Ends every session (with a goodbye) and connection, closes the broker and both sockets. */
  close(): Promise<void>;
}

export async function startMqttTransport(opts: MqttTransportOptions): Promise<MqttTransport> {
  const { mqtt, log } = opts;
  const warn = createLogRateLimit({ perSecond: 1, burst: 3 }).wrap(log);
  const audio = new UdpAudio({
    host: mqtt.host,
    port: mqtt.udpPort,
    log,
    ...(opts.onUdpDrop ? { onDrop: opts.onUdpDrop } : {}),
  });
  const gate = connectionGate(opts, warn);
  const endpoints = new DeviceEndpoints(mqtt);
  const conns: BrokerConnections = new WeakMap();
  const links = new MqttLinks(conns, linkContext(opts, audio, endpoints), log);
  const broker = await createBroker({
    settings: mqtt,
    auth: opts.auth,
    conns,
    links,
    gate,
    perAddress: new PerIpLimits(opts.connectRate),
    sessions: opts.sessions,
    log,
    warn,
  });
  opts.devices?.onRevoked((gone) => links.revoke(gone));
  let closing = false;
  const listener = await listenWithUdp(audio, () =>
    listenForDevices({
      settings: mqtt,
      broker,
      gate,
      keys: new AddressKeys(opts.address),
      conns,
      closing: () => closing,
      log,
      warn,
    }),
  ).catch(async (err: unknown) => {
    await audio.close();
    await closeBroker(broker);
    throw err;
  });
  const ports = { mqtt: listener.port, udp: audio.port };
  logListening(log, mqtt.host, ports, listener.tls);
  return {
    name: 'mqtt',
    ports,
    find: (deviceId, clientId) => links.find(deviceId, clientId),
    onConnected: (l) => links.onConnected(l),
    stats: () => ({ connections: broker.connectedClients, devices: links.size, audioSessions: audio.sessions }),
    otaSection: ({ deviceId, clientId, generation, host, hostIsOwn }) => ({
      endpoint: endpoints.broker(deviceId, clientId, host, ports.mqtt, hostIsOwn),
      ...mqttCredentials(opts.auth.secret(), deviceId, clientId, generation),
      keepalive: mqtt.keepaliveS,
      publish_topic: mqtt.publishTopic,
    }),
    close: async () => {
      if (closing) return;
      closing = true;
      await links.closeAll();
      await listener.close();
      await closeBroker(broker);
      await audio.close();
    },
  };
}

/** The broker's port, then the UDP socket; when the second cannot be bound the first is released. */
async function listenWithUdp(audio: UdpAudio, listenTcp: () => Promise<DeviceListener>): Promise<DeviceListener> {
  const listener = await listenTcp();
  try {
    await audio.listen();
  } catch (err) {
    await listener.close();
    throw err;
  }
  return listener;
}

function closeBroker(broker: Aedes): Promise<void> {
  return new Promise<void>((resolve) => broker.close(() => resolve()));
}

/** Connections per address before and after CONNECT, and the CONNECT deadlines. */
function connectionGate(opts: MqttTransportOptions, warn: Logger): ConnectionGate {
  const limit = opts.mqtt.maxPendingPerAddress;
  return new ConnectionGate({
    maxPendingPerAddress: limit,
    maxAuthenticatedPerAddress: opts.maxConnectionsPerAddress,
    connectTimeoutMs: opts.connectDeadlines?.normalMs ?? CONNECT_TIMEOUT_MS,
    pressuredConnectTimeoutMs: opts.connectDeadlines?.pressuredMs ?? PRESSURED_CONNECT_TIMEOUT_MS,
    onClose: (address, why) =>
      warn.warn(
        { address, limit },
        why === 'evicted'
          ? 'MQTT connection closed: too many connections without CONNECT from its address (the oldest goes)'
          : 'MQTT connection closed: no CONNECT in time',
      ),
  });
}

/** What every link shares: the UDP socket, its server address, and the door each hello's session opens through. */
function linkContext(opts: MqttTransportOptions, audio: UdpAudio, endpoints: DeviceEndpoints): LinkContext {
  const { sessions } = opts;
  return {
    audio,
    downlinkTopic: 'devices/p2p',
    controlRate: opts.controlRate,
    udpServerFor: (link, localAddress) => endpoints.udpServer(link.deviceId, link.clientId, localAddress),
    openSession: (link, sessionId, channel, sessionLog) => {
      if (sessions.drainingRefusal(link.log) || sessions.capacityRefusal(link, link.log)) return null;
      // No controlRate here: the link's own budget covers every message of the connection, hellos included.
      return sessions.open({ sessionId, pair: link, headerProtocolVersion: null, channel, log: sessionLog });
    },
  };
}

/**
 * The firmware prefers `mqtt` over `websocket` whenever OTA offers it: the operator must know
 * that devices leave the WebSocket, and that both ports have to be reachable (TCP alone lets a
 * device connect and say hello, and then no audio flows).
 */
function logListening(log: Logger, host: string, ports: { mqtt: number; udp: number }, tls: boolean): void {
  log.info(
    { mqtt: `${host}:${ports.mqtt}`, udp: ports.udp, tls, open: [`${ports.mqtt}/tcp`, `${ports.udp}/udp`] },
    `MQTT broker and UDP audio listening: open TCP ${ports.mqtt}${tls ? ' (TLS)' : ''} and UDP ${ports.udp} to the devices; devices offered mqtt at OTA move from the WebSocket to MQTT`,
  );
}
