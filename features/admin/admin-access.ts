/**
 * @module Who may see admin details: a caller presenting `server.adminSecret` as a bearer token,
 * or a direct loopback caller. A loopback request carrying proxy headers came through a reverse
 * proxy on this host from anywhere, so it does not count as local. A presented secret is a guess:
 * a wrong one spends the address's guesses (`guesses`), and once they are spent the secret is not
 * compared at all, so the answer (details or not) stops telling a right guess from a wrong one.
 */
import type { FastifyRequest } from 'fastify';
import type { SignInLimit } from './sign-in-limit.ts';
import { tokenMatches } from './admin-token.ts';
import { addressKey } from '../../core/address-key.ts';

const PROXY_HEADERS = ['x-forwarded-for', 'forwarded', 'x-real-ip'];

function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const a = address.startsWith('::ffff:') ? address.slice(7) : address;
  return a === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(a);
}

export function isAdmin(req: FastifyRequest, adminSecret: string, guesses: SignInLimit): boolean {
  if (adminSecret) {
    const presented = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '')?.[1];
    if (presented && guesses.attempt(addressKey(req), () => tokenMatches(presented, adminSecret)) === 'match')
      return true;
  }
  if (PROXY_HEADERS.some((h) => req.headers[h] !== undefined)) return false;
  return isLoopback(req.socket.remoteAddress);
}
