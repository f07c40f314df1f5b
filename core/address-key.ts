/**
 * @module The one key every per-address limit counts by. The client is the socket's peer, or,
 * when that peer is a trusted proxy (`server.trustProxy`), the rightmost `X-Forwarded-For` entry
 * that is not itself a trusted proxy: proxies append the address they received from, so entries
 * left of the last untrusted hop are whatever the client chose to send. From any other peer the
 * header is ignored. An IPv4-mapped IPv6 address is its IPv4 address, and IPv6 clients are
 * counted by prefix (`server.ipv6PrefixLength`, /64 by default): one host is given a whole /64,
 * so counting full addresses would give it 2^64 budgets.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { formatIp, inRange, parseIp, parseRange, truncateTo, type IpAddress, type IpRange } from './ip-address.ts';

export interface AddressSettings {
  /** Addresses or CIDRs of proxies whose `X-Forwarded-For` is believed. */
  trustProxy: readonly string[];
  /** IPv6 clients are counted by this prefix (32–128). */
  ipv6PrefixLength: number;
}

export const DEFAULT_ADDRESS_SETTINGS: AddressSettings = { trustProxy: [], ipv6PrefixLength: 64 };

/** Stands for a peer whose address is unknown or unreadable (one shared budget). */
const UNKNOWN = 'unknown';

export class AddressKeys {
  readonly #trusted: IpRange[];
  readonly #prefix: number;

  constructor(settings: AddressSettings) {
    this.#trusted = settings.trustProxy.map((t) => {
      const r = parseRange(t);
      if (!r) throw new Error(`server.trustProxy: ${t} is not an IP address or CIDR`);
      return r;
    });
    this.#prefix = settings.ipv6PrefixLength;
  }

  #isTrusted(ip: IpAddress): boolean {
    return this.#trusted.some((r) => inRange(ip, r));
  }

  /** The client's address: the peer, or what trusted proxies in front of it say (see the module). */
  client(peer: string | undefined, forwardedFor: string | string[] | undefined): IpAddress | null {
    let current = peer === undefined ? null : parseIp(peer);
    if (!current || !this.#isTrusted(current) || forwardedFor === undefined) return current;
    const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',');
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = parseHop(hops[i] ?? '');
      // An entry a trusted proxy wrote that is not an address: stay with that proxy, so a client
      // cannot escape its budget by sending garbage.
      if (!hop) return current;
      current = hop;
      if (!this.#isTrusted(hop)) return hop;
    }
    return current;
  }

  /** The budget key of an address: IPv4 as is, IPv6 cut to its prefix (`2001:db8:1:2::/64`). */
  keyOf(ip: IpAddress | null): string {
    if (!ip) return UNKNOWN;
    if (ip.family === 4 || this.#prefix >= 128) return formatIp(ip);
    return `${formatIp(truncateTo(ip, this.#prefix))}/${this.#prefix}`;
  }

  key(peer: string | undefined, forwardedFor: string | string[] | undefined): string {
    return this.keyOf(this.client(peer, forwardedFor));
  }
}

/** One `X-Forwarded-For` entry: an address, maybe bracketed, maybe with a port (`1.2.3.4:5678`, `[::1]:80`). */
function parseHop(text: string): IpAddress | null {
  const t = text.trim();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(t);
  if (bracketed) return parseIp(bracketed[1] ?? '');
  const v4WithPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(t);
  return parseIp(v4WithPort ? (v4WithPort[1] ?? '') : t);
}

const SETTINGS = Symbol('addressKeys');
const DEFAULT_KEYS = new AddressKeys(DEFAULT_ADDRESS_SETTINGS);
const keyCache = new WeakMap<object, { key: string; client: string }>();

/**
 * Makes `addressKey` use these settings for every route of `app` (call before registering routes;
 * children inherit it). Without it the defaults apply: no trusted proxy, IPv6 by /64.
 */
export function useAddressSettings(app: FastifyInstance, settings: AddressSettings): void {
  app.decorate(SETTINGS, new AddressKeys(settings));
}

function resolve(request: FastifyRequest): { key: string; client: string } {
  const cached = keyCache.get(request.raw);
  if (cached) return cached;
  const keys = (request.server as unknown as Record<symbol, AddressKeys | undefined>)[SETTINGS] ?? DEFAULT_KEYS;
  const ip = keys.client(request.raw.socket.remoteAddress, request.headers['x-forwarded-for']);
  const out = { key: keys.keyOf(ip), client: ip ? formatIp(ip) : UNKNOWN };
  keyCache.set(request.raw, out);
  return out;
}

/** The key every per-address limit counts `request` by. */
export function addressKey(request: FastifyRequest): string {
  return resolve(request).key;
}

/** The client's own address (not cut to a prefix), for log lines. */
export function clientAddress(request: FastifyRequest): string {
  return resolve(request).client;
}
