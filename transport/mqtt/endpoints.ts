/**
 * @module Where a device reaches the broker and the UDP socket: the endpoint OTA hands it
 * (`mqtt.publicEndpoint`, else the host it reached OTA by with the broker's port) and the UDP
 * server its hello names (`mqtt.udpPublicHost`, else the public endpoint's host, else the host OTA
 * told that pair, else the address its connection reached us at).
 */
import { makeRoom } from '../../core/bounded-map.ts';
import { formatIp, parseIp } from '../../core/ip-address.ts';
import { pairKey } from '../../store/pair-key.ts';

/** The host part of `host:port` (IPv6 in brackets allowed). */
function hostOf(endpoint: string): string {
  const m = /^\[([^\]]+)\](?::\d+)?$/.exec(endpoint);
  if (m) return m[1] ?? '';
  const i = endpoint.lastIndexOf(':');
  return i > 0 && endpoint.indexOf(':') === i ? endpoint.slice(0, i) : endpoint;
}

export interface EndpointSettings {
  publicEndpoint: string;
  udpPublicHost: string;
  /** Bounds the hosts remembered per pair (strangers can ask OTA for any pair). */
  maxConnections: number;
}

export class DeviceEndpoints {
  readonly #settings: EndpointSettings;
  /** The endpoint host OTA handed each pair (most recent last; bounded like every map strangers fill). */
  readonly #told = new Map<string, string>();

  constructor(settings: EndpointSettings) {
    this.#settings = settings;
  }

  /**
   * The broker endpoint for a pair that reached OTA at `host`, remembered for its UDP server when
   * `remember` (the host is one of the server's names): otherwise a stranger asking OTA for a
   * device's pair with a Host of its own would send that device's audio there.
   */
  broker(deviceId: string, clientId: string, host: string, brokerPort: number, remember: boolean): string {
    const { publicEndpoint } = this.#settings;
    if (publicEndpoint) return publicEndpoint;
    if (!remember) return `${host}:${brokerPort}`;
    const key = pairKey(deviceId, clientId);
    this.#told.delete(key);
    makeRoom(this.#told, Math.max(1000, this.#settings.maxConnections));
    this.#told.set(key, host);
    return `${host}:${brokerPort}`;
  }

  /** The address a pair sends UDP to; its broker connection reached us at `localAddress`. */
  udpServer(deviceId: string, clientId: string, localAddress: string | undefined): string {
    const { udpPublicHost, publicEndpoint } = this.#settings;
    if (udpPublicHost) return udpPublicHost;
    if (publicEndpoint) return hostOf(publicEndpoint);
    // The host OTA told this device to reach the broker at: it reaches us there (behind a
    // container's port mapping too, where the socket's local address is the container's).
    const told = this.#told.get(pairKey(deviceId, clientId));
    if (told) return told;
    const ip = localAddress ? parseIp(localAddress) : null;
    return ip ? formatIp(ip) : (localAddress ?? '127.0.0.1');
  }
}
