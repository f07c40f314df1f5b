/**
 * @module The broker's authenticated clients and their links: one `MqttDeviceLink` per client,
 * made once CONNACK is written (the broker handles what the client publishes from then on, before
 * it reports the client ready, and the firmware publishes its hello the moment its CONNECT
 * returns), found by pair and by MAC (push reaches idle devices through them), and replaced when
 * the pair connects again. The connection under each client stream is recorded by the listener.
 */
import type { Socket } from 'node:net';
import type { Client } from 'aedes';
import type { Logger } from '../../core/logger.ts';
import { pairKey } from '../../store/pair-key.ts';
import type { GateTicket } from './connection-gate.ts';
import { MqttDeviceLink, type LinkContext } from './device-link.ts';

/** The socket, address key and gate ticket under a stream the broker reads. */
export interface BrokerConnection {
  socket: Socket;
  address: string;
  remote: string;
  ticket: GateTicket;
}

/** By the stream the broker reads (`client.conn`). */
export type BrokerConnections = WeakMap<object, BrokerConnection>;

interface Pair {
  deviceId: string;
  clientId: string;
}

export class MqttLinks {
  readonly #conns: BrokerConnections;
  readonly #ctx: LinkContext;
  readonly #log: Logger;
  readonly #pairs = new WeakMap<Client, Pair>();
  readonly #byClient = new WeakMap<Client, MqttDeviceLink>();
  readonly #byPair = new Map<string, MqttDeviceLink>();
  readonly #byDevice = new Map<string, Set<MqttDeviceLink>>();
  readonly #listeners = new Set<(link: MqttDeviceLink) => void>();
  #closing = false;

  constructor(conns: BrokerConnections, ctx: LinkContext, log: Logger) {
    this.#conns = conns;
    this.#ctx = ctx;
    this.#log = log;
  }

  /** Connected pairs. */
  get size(): number {
    return this.#byPair.size;
  }

  /** The pair's CONNECT was accepted: the client gets its link at CONNACK. */
  authenticated(client: Client, pair: Pair): void {
    this.#pairs.set(client, pair);
  }

  /** Whether the pair is connected (a new connection of it replaces that one). */
  has(deviceId: string, clientId: string): boolean {
    return this.#byPair.has(pairKey(deviceId, clientId));
  }

  /** The link of an authenticated client, made on first ask; undefined (and the client closed) when it cannot have one. */
  linkOf(client: Client): MqttDeviceLink | undefined {
    const pair = this.#pairs.get(client);
    if (!pair) return undefined;
    // A client has one link for its life, even once a newer connection of the pair displaced it.
    const made = this.#byClient.get(client);
    if (made) return made;
    const conn = this.#conns.get(client.conn);
    if (!conn || this.#closing || client.closed) {
      client.close();
      return undefined;
    }
    // `log` already says `transport: mqtt` (transport-for-config.ts): a second binding would repeat the key on every line.
    const linkLog = this.#log.child({ deviceId: pair.deviceId, clientId: pair.clientId });
    const link = new MqttDeviceLink(client, conn.socket, pair.deviceId, pair.clientId, this.#ctx, linkLog);
    this.#byClient.set(client, link);
    this.#replace(pair, link);
    linkLog.info({ remote: conn.remote }, 'device connected over MQTT');
    this.#announce(link, linkLog);
    return link;
  }

  #replace(pair: Pair, link: MqttDeviceLink): void {
    const key = pairKey(pair.deviceId, pair.clientId);
    const old = this.#byPair.get(key);
    if (old && old.client !== link.client) old.handleDisconnected();
    this.#byPair.set(key, link);
    let set = this.#byDevice.get(pair.deviceId);
    if (!set) this.#byDevice.set(pair.deviceId, (set = new Set()));
    if (old) set.delete(old);
    set.add(link);
  }

  #announce(link: MqttDeviceLink, log: Logger): void {
    for (const listener of this.#listeners) {
      try {
        listener(link);
      } catch (err) {
        log.error({ err }, 'onConnected listener failed');
      }
    }
  }

  /** The client's connection is gone: its link (if still the pair's) ends its session. */
  disconnected(client: Client): void {
    const pair = this.#pairs.get(client);
    if (!pair) return;
    const key = pairKey(pair.deviceId, pair.clientId);
    const link = this.#byPair.get(key);
    if (!link || link.client !== client) return;
    link.handleDisconnected();
    this.#byPair.delete(key);
    const set = this.#byDevice.get(pair.deviceId);
    set?.delete(link);
    if (set?.size === 0) this.#byDevice.delete(pair.deviceId);
    link.log.info('device disconnected from MQTT');
  }

  /** Pairs that lost their right to connect: their sessions and connections end. */
  revoke(gone: readonly Pair[]): void {
    for (const d of gone) this.#byPair.get(pairKey(d.deviceId, d.clientId))?.revoke();
  }

  /** The pair's link (with `clientId`), else the MAC's most recently connected one. */
  find(deviceId: string, clientId?: string): MqttDeviceLink | undefined {
    if (clientId !== undefined) return this.#byPair.get(pairKey(deviceId, clientId));
    let latest: MqttDeviceLink | undefined;
    for (const l of this.#byDevice.get(deviceId.toLowerCase()) ?? []) latest = l;
    return latest;
  }

  /** Told of each new link (push delivers queued messages then). Returns the unsubscribe. */
  onConnected(listener: (link: MqttDeviceLink) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Shutdown: no new links; each session ends with a goodbye and each connection closes. Resolves once the sessions have ended. */
  async closeAll(): Promise<void> {
    this.#closing = true;
    const ending: Promise<void>[] = [];
    for (const link of [...this.#byPair.values()]) {
      const s = link.session;
      if (s) ending.push(s.closed);
      link.close();
    }
    this.#byPair.clear();
    this.#byDevice.clear();
    await Promise.all(ending);
  }
}
