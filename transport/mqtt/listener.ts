/**
 * @module The broker's TCP port (TLS when `mqtt.tlsCert` and `mqtt.tlsKey` are set): each
 * connection enters the connection gate from its first byte, gets TCP keepalive and the packet
 * size limit, and is handed to the broker; the stream's socket, address and gate ticket are
 * recorded for the broker's CONNECT check and the link.
 */
import { readFileSync } from 'node:fs';
import { createServer as createTcpServer, type Server, type Socket } from 'node:net';
import { createSecureContext, TLSSocket } from 'node:tls';
import type { Aedes } from 'aedes';
import type { Logger } from '../../core/logger.ts';
import type { AddressKeys } from '../../core/address-key.ts';
import type { ConnectionGate, GateTicket } from './connection-gate.ts';
import type { BrokerConnections } from './link-table.ts';
import { limitConnection } from './packet-limit.ts';

export interface ListenerParts {
  settings: {
    host: string;
    port: number;
    tlsCert: string;
    tlsKey: string;
    maxConnections: number;
    maxPacketBytes: number;
  };
  broker: Aedes;
  gate: ConnectionGate;
  keys: AddressKeys;
  conns: BrokerConnections;
  /** True once the transport closes: new connections are dropped. */
  closing: () => boolean;
  log: Logger;
  /** `log`, rate-limited. */
  warn: Logger;
}

export interface DeviceListener {
  readonly port: number;
  readonly tls: boolean;
  /** Stops listening and drops every connection still open (those without CONNECT would hold the server). */
  close(): Promise<void>;
}

/** Listens on `settings.host:port`; rejects when the port cannot be bound. */
export async function listenForDevices(parts: ListenerParts): Promise<DeviceListener> {
  const { settings, broker, gate, keys, conns, warn } = parts;
  const tls = settings.tlsCert !== '' && settings.tlsKey !== '';
  const secureContext = tls
    ? createSecureContext({ cert: readFileSync(settings.tlsCert), key: readFileSync(settings.tlsKey) })
    : undefined;
  const sockets = new Set<Socket>();

  /** The broker reads `socket` (TCP, or TLS once its handshake is done). */
  const handle = (socket: Socket, address: string, remote: string, ticket: GateTicket): void => {
    // A device that lost power leaves a half-open connection: TCP keepalive finds it.
    socket.setKeepAlive(true, 60_000);
    socket.setNoDelay(true);
    const stream = limitConnection(socket, settings.maxPacketBytes, () =>
      warn.warn({ remote, limit: settings.maxPacketBytes }, 'MQTT connection closed: packet over the size limit'),
    );
    conns.set(stream, { socket, address, remote, ticket });
    broker.handle(stream);
  };

  const onConnection = (raw: Socket): void => {
    if (parts.closing()) {
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
  server.maxConnections = settings.maxConnections;
  server.on('error', (err) => parts.log.error({ err: err.message }, 'MQTT server error'));
  await listen(server, settings.port, settings.host);
  const bound = server.address();
  return {
    port: typeof bound === 'object' && bound ? bound.port : settings.port,
    tls,
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Connections that never sent CONNECT would hold the server open until their timeout.
      for (const socket of sockets) socket.destroy();
      gate.close();
      await closed;
    },
  };
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  }).catch((err: unknown) => {
    server.close();
    throw err;
  });
}
