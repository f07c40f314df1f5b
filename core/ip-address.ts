/**
 * @module IP addresses as bytes: parsing (with brackets, a zone or an IPv4-mapped form), printing,
 * CIDR ranges, prefixes and loopback. An IPv4-mapped IPv6 address (`::ffff:1.2.3.4`, what a
 * dual-stack socket reports for an IPv4 client) is parsed as the IPv4 address it carries, so both
 * spellings of one client are one address everywhere.
 */
import { isIP } from 'node:net';

export interface IpAddress {
  family: 4 | 6;
  /** 4 or 16 bytes, network order. */
  bytes: Uint8Array;
}

export interface IpRange {
  family: 4 | 6;
  bytes: Uint8Array;
  /** Prefix length: 0–32 for IPv4, 0–128 for IPv6. */
  bits: number;
}

function parseIpv4(text: string): Uint8Array {
  return Uint8Array.from(text.split('.').map(Number));
}

/** 16 bytes of a valid IPv6 literal (checked by `isIP` first), an IPv4 tail included. */
function parseIpv6(text: string): Uint8Array {
  const out = new Uint8Array(16);
  const groups = (part: string): number[] => {
    if (part === '') return [];
    const words: number[] = [];
    for (const g of part.split(':')) {
      if (g.includes('.')) {
        const [a, b, c, d] = parseIpv4(g) as unknown as [number, number, number, number];
        words.push((a << 8) | b, (c << 8) | d);
      } else words.push(parseInt(g, 16));
    }
    return words;
  };
  const gap = text.indexOf('::');
  const head = groups(gap >= 0 ? text.slice(0, gap) : text);
  const tail = gap >= 0 ? groups(text.slice(gap + 2)) : [];
  const words = [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
  words.forEach((w, i) => {
    out[i * 2] = w >> 8;
    out[i * 2 + 1] = w & 0xff;
  });
  return out;
}

const MAPPED_PREFIX = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];

function isMapped(bytes: Uint8Array): boolean {
  return bytes.length === 16 && MAPPED_PREFIX.every((b, i) => bytes[i] === b);
}

/**
 * The address in `text`, or null when it is not one. Accepts `[v6]`, a zone (`fe80::1%eth0`, the
 * zone dropped) and IPv4-mapped IPv6 in either notation, which becomes IPv4.
 */
export function parseIp(text: string): IpAddress | null {
  let t = text.trim();
  if (t.startsWith('[') && t.endsWith(']')) t = t.slice(1, -1);
  const zone = t.indexOf('%');
  if (zone >= 0) t = t.slice(0, zone);
  const family = isIP(t);
  if (family === 4) return { family: 4, bytes: parseIpv4(t) };
  if (family !== 6) return null;
  const bytes = parseIpv6(t);
  if (isMapped(bytes)) return { family: 4, bytes: bytes.slice(12) };
  return { family: 6, bytes };
}

/** Dotted IPv4, or IPv6 in its canonical short form (RFC 5952: lowercase, longest zero run as `::`). */
export function formatIp(ip: IpAddress): string {
  if (ip.family === 4) return Array.from(ip.bytes).join('.');
  const words = Array.from({ length: 8 }, (_, i) => ((ip.bytes[i * 2] ?? 0) << 8) | (ip.bytes[i * 2 + 1] ?? 0));
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (words[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = (ws: number[]): string => ws.map((w) => w.toString(16)).join(':');
  if (best < 0) return hex(words);
  return `${hex(words.slice(0, best))}::${hex(words.slice(best + bestLen))}`;
}

/** The first `bits` bits of `ip`, the rest zero. */
export function truncateTo(ip: IpAddress, bits: number): IpAddress {
  const bytes = Uint8Array.from(ip.bytes);
  for (let i = 0; i < bytes.length; i++) {
    const keep = Math.max(0, Math.min(8, bits - i * 8));
    bytes[i] = (bytes[i] ?? 0) & ((0xff << (8 - keep)) & 0xff);
  }
  return { family: ip.family, bytes };
}

/**
 * `10.0.0.0/8`, `2001:db8::/32` or a single address (a range of one). An IPv4-mapped range
 * (`::ffff:10.0.0.0/104`) is the IPv4 range it maps. Null when malformed.
 */
export function parseRange(text: string): IpRange | null {
  const slash = text.indexOf('/');
  const addrText = slash >= 0 ? text.slice(0, slash) : text;
  const bitsText = slash >= 0 ? text.slice(slash + 1) : undefined;
  let t = addrText.trim();
  if (t.startsWith('[') && t.endsWith(']')) t = t.slice(1, -1);
  const family = isIP(t);
  if (family !== 4 && family !== 6) return null;
  const max = family === 4 ? 32 : 128;
  let bits = max;
  if (bitsText !== undefined) {
    if (!/^\d{1,3}$/.test(bitsText.trim())) return null;
    bits = Number(bitsText.trim());
    if (bits > max) return null;
  }
  if (family === 6) {
    const bytes = parseIpv6(t);
    if (isMapped(bytes) && bits >= 96)
      return { family: 4, bytes: truncateTo({ family: 4, bytes: bytes.slice(12) }, bits - 96).bytes, bits: bits - 96 };
    return { family: 6, bytes: truncateTo({ family: 6, bytes }, bits).bytes, bits };
  }
  return { family: 4, bytes: truncateTo({ family: 4, bytes: parseIpv4(t) }, bits).bytes, bits };
}

export function inRange(ip: IpAddress, range: IpRange): boolean {
  if (ip.family !== range.family) return false;
  const masked = truncateTo(ip, range.bits).bytes;
  return masked.every((b, i) => b === range.bytes[i]);
}

const LOOPBACK = [parseRange('127.0.0.0/8'), parseRange('::1')] as IpRange[];

/** 127.0.0.0/8 (also IPv4-mapped) and ::1. */
export function isLoopback(ip: IpAddress): boolean {
  return LOOPBACK.some((r) => inRange(ip, r));
}
