/**
 * @module Which network addresses a tool may connect to on a user's (or a model's) behalf, and a
 * DNS lookup that enforces it. An allowlisted host name proves nothing about where it points: a
 * name can resolve (or be re-pointed between a check and the connection) to loopback, the LAN or a
 * cloud metadata address. So every address the lookup returns is checked, and the connection uses
 * exactly the checked address: there is no second resolution to rebind.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/**
 * Not the public internet: loopback, private, link-local, CGNAT, ULA, multicast, reserved,
 * documentation. Also the ranges that reach an address by a detour, refused whole whatever they
 * carry: the 6to4 relay anycast 192.88.99.0/24 and 6to4 2002::/16 (2002:a9fe:a9fe:: is
 * 169.254.169.254 to a 6to4 relay), Teredo 2001::/32 (a tunnel to an IPv4 address and port),
 * the local-use NAT64 prefix 64:ff9b:1::/48 (translated by the local network, so its IPv4 is
 * whatever that network reaches) and the deprecated site-local fec0::/10.
 */
const NON_PUBLIC = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  NON_PUBLIC.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
  ['2001:db8::', 32],
  ['100::', 64],
  ['2002::', 16],
  ['2001::', 32],
  ['64:ff9b:1::', 48],
] as const)
  NON_PUBLIC.addSubnet(net, bits, 'ipv6');

/** The IPv4 address an IPv6 address carries (IPv4-mapped, IPv4-compatible or NAT64), if any. */
function embeddedIpv4(ip: string): string | undefined {
  const m = /^(?:::ffff:(?:0:)?|::|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (m) return m[1];
  // The same in hex: ::ffff:7f00:1, 64:ff9b::a00:1, ::7f00:1.
  const h = /^(?:::ffff:(?:0:)?|::|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(ip);
  if (!h) return undefined;
  const hi = parseInt(h[1] as string, 16);
  const lo = parseInt(h[2] as string, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** True for an address on the public internet. */
export function isPublicAddress(ip: string): boolean {
  const family = isIP(ip);
  if (family === 4) return !NON_PUBLIC.check(ip, 'ipv4');
  if (family !== 6) return false;
  const v4 = embeddedIpv4(ip);
  if (v4 !== undefined) return isIP(v4) === 4 && !NON_PUBLIC.check(v4, 'ipv4');
  return !NON_PUBLIC.check(ip, 'ipv6');
}

export interface AddressGuardOptions {
  /** Also allow non-public addresses (a music server on the LAN). */
  allowPrivate: boolean;
  /** The resolver (tests inject one); default the system's. */
  resolve?: (host: string) => Promise<LookupAddress[]>;
}

function systemResolve(host: string): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) =>
    dnsLookup(host, { all: true, verbatim: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))),
  );
}

/** Why `host` may not be connected to, or the checked addresses it may be connected to. */
export async function resolveChecked(
  host: string,
  opts: AddressGuardOptions,
): Promise<{ ok: true; addresses: LookupAddress[] } | { ok: false; reason: string }> {
  const literal = host.replace(/^\[|\]$/g, '');
  const addresses = isIP(literal)
    ? [{ address: literal, family: isIP(literal) }]
    : await (opts.resolve ?? systemResolve)(host);
  if (addresses.length === 0) return { ok: false, reason: `${host} does not resolve` };
  if (!opts.allowPrivate) {
    const bad = addresses.find((a) => !isPublicAddress(a.address));
    if (bad) return { ok: false, reason: `${host} resolves to ${bad.address}, which is not a public address` };
  }
  return { ok: true, addresses };
}

/**
 * A `lookup` for node:http(s) requests: resolves, checks every address, and hands the socket only
 * checked ones. A refused host fails the request with the reason.
 */
export function guardedLookup(opts: AddressGuardOptions): LookupFunction {
  return (hostname, options, callback) => {
    resolveChecked(hostname, opts).then(
      (r) => {
        if (!r.ok) {
          callback(Object.assign(new Error(r.reason), { code: 'EADDRNOTALLOWED' }), '', 4);
          return;
        }
        const wantAll = typeof options === 'object' && options !== null && (options as { all?: boolean }).all === true;
        if (wantAll) (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, r.addresses);
        else callback(null, (r.addresses[0] as LookupAddress).address, (r.addresses[0] as LookupAddress).family);
      },
      (err: unknown) => callback(err instanceof Error ? (err as NodeJS.ErrnoException) : new Error(String(err)), '', 4),
    );
  };
}
