/**
 * @module Who is calling the admin API: the bearer token or a console session cookie. The token check: both sides hashed to a fixed length first and compared with
 * `timingSafeEqual`, so neither the token's content nor its length shows in the answer's timing.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { ADMIN_COOKIE, readCookie, type AdminSessions } from './admin-sessions.ts';

function sha256(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

export function tokenMatches(presented: string, token: string): boolean {
  if (token === '') return false;
  return timingSafeEqual(sha256(presented), sha256(token));
}

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return m?.[1];
}

/** How the request is authenticated: the bearer token, a live console session cookie, or not at all. */
export function authenticate(request: FastifyRequest, token: string, sessions: AdminSessions): 'bearer' | 'cookie' | null {
  const bearer = bearerToken(request.headers.authorization);
  if (bearer !== undefined) return tokenMatches(bearer, token) ? 'bearer' : null;
  const id = readCookie(request.headers.cookie, ADMIN_COOKIE);
  return id && sessions.check(id) !== undefined ? 'cookie' : null;
}
