/**
 * @module Who may see admin details: a caller presenting `server.adminSecret` as a bearer token,
 * or a direct loopback caller. A loopback request carrying proxy headers came through a reverse
 * proxy on this host from anywhere, so it does not count as local.
 */
import { timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';

const PROXY_HEADERS = ['x-forwarded-for', 'forwarded', 'x-real-ip'];

function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const a = address.startsWith('::ffff:') ? address.slice(7) : address;
  return a === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(a);
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export function isAdmin(req: FastifyRequest, adminSecret: string): boolean {
  if (adminSecret) {
    const m = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '');
    if (m?.[1] && safeEqual(m[1], adminSecret)) return true;
  }
  if (PROXY_HEADERS.some((h) => req.headers[h] !== undefined)) return false;
  return isLoopback(req.socket.remoteAddress);
}
