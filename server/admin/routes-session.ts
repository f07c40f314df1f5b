/**
 * @module The console's sign-in: the admin token, checked in constant time and rate-limited per
 * address, buys an HttpOnly, SameSite=Strict cookie naming a server-side session; sign-out ends it.
 */
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import { AdminError, adminRoute } from './route.ts';
import { ADMIN_COOKIE, readCookie, sessionCookie } from './admin-sessions.ts';
import { authenticate, tokenMatches } from './admin-token.ts';
import { SignInBody, SignedIn } from './schemas.ts';
import { addressKey, clientAddress } from '../http/address-key.ts';

/** The console was reached over https (directly, or through a proxy that says so). */
function overHttps(request: FastifyRequest): boolean {
  const forwarded = String(request.headers['x-forwarded-proto'] ?? '').split(',')[0]?.trim();
  return request.protocol === 'https' || forwarded === 'https';
}

export const sessionRoutes = [
  adminRoute({
    id: 'signIn',
    method: 'POST',
    path: '/session',
    summary: 'Signs a browser in with the admin token: sets the session cookie. At most 5 attempts a minute per address.',
    auth: false,
    params: null,
    body: SignInBody,
    status: 200,
    response: SignedIn,
    errors: { 429: 'too many attempts from this address: wait Retry-After seconds' },
    handle: async ({ body }, ctx, { request, reply }) => {
      if (!ctx.signInLimit.take(addressKey(request))) {
        reply.header('Retry-After', String(ctx.signInLimit.retryAfterS));
        ctx.log.warn({ address: clientAddress(request) }, 'admin: sign-in attempts over the limit');
        throw new AdminError(429, 'too many sign-in attempts: try again in a minute');
      }
      if (!tokenMatches(body.token, ctx.token)) {
        ctx.log.warn({ address: clientAddress(request) }, 'admin: sign-in with a wrong token');
        throw new AdminError(401, 'wrong admin token', 'body.token');
      }
      const s = ctx.sessions.create();
      reply.header('Set-Cookie', sessionCookie(s.id, Math.floor((s.expiresAt - Date.now()) / 1000), overHttps(request)));
      ctx.log.info({ address: clientAddress(request) }, 'admin: signed in');
      return { signedIn: true as const, expiresAt: new Date(s.expiresAt).toISOString() };
    },
  }),
  adminRoute({
    id: 'whoAmI',
    method: 'GET',
    path: '/session',
    summary: 'Whether the caller is signed in (console cookie) or holds the token; answers 200 either way.',
    auth: false,
    params: null,
    body: null,
    status: 200,
    response: z.object({ signedIn: z.boolean() }),
    handle: async (_in, ctx, { request }) => ({ signedIn: authenticate(request, ctx.token, ctx.sessions) !== null }),
  }),
  adminRoute({
    id: 'signOut',
    method: 'DELETE',
    path: '/session',
    summary: "Signs the browser out: ends its session and clears the cookie.",
    auth: false,
    params: null,
    body: null,
    status: 204,
    response: null,
    handle: async (_in, ctx, { request, reply }) => {
      const id = readCookie(request.headers.cookie, ADMIN_COOKIE);
      if (id) ctx.sessions.end(id);
      reply.header('Set-Cookie', sessionCookie('', 0, overHttps(request)));
      return undefined;
    },
  }),
];
