/**
 * @module The console's sign-in: the admin token, checked by the one token guard (constant time,
 * wrong ones counted per address or known client), buys an HttpOnly, SameSite=Strict cookie naming
 * a server-side session; sign-out ends it.
 */
import { z } from 'zod';
import { AdminError, adminRoute } from './route.ts';
import { ADMIN_COOKIE, overHttps, readCookie, sessionCookie } from './admin-sessions.ts';
import { SignInBody, SignedIn } from './schemas.ts';
import { clientAddress } from '../../core/address-key.ts';

export const sessionRoutes = [
  adminRoute({
    id: 'signIn',
    method: 'POST',
    path: '/session',
    summary:
      'Signs a browser in with the admin token: sets the session cookie. At most 5 wrong tokens a minute per address (on any route), or per known client.',
    auth: false,
    params: null,
    body: SignInBody,
    status: 200,
    response: SignedIn,
    errors: { 429: 'too many wrong admin tokens from this address: wait Retry-After seconds' },
    handle: async ({ body }, ctx, { request, reply }) => {
      if (!ctx.tokenGuard.check(body.token, request, reply))
        throw new AdminError(401, 'wrong admin token', 'body.token');
      const s = ctx.sessions.create();
      reply.header(
        'Set-Cookie',
        sessionCookie(s.id, Math.floor((s.expiresAt - Date.now()) / 1000), overHttps(request)),
      );
      ctx.log.info({ address: clientAddress(request) }, 'admin: signed in');
      return { signedIn: true as const, expiresAt: new Date(s.expiresAt).toISOString() };
    },
  }),
  adminRoute({
    id: 'whoAmI',
    method: 'GET',
    path: '/session',
    summary:
      'Whether the caller is signed in (console cookie) or holds the token; answers 200 either way. A bearer token is a guess like any other: 429 once the guesses are spent.',
    auth: false,
    params: null,
    body: null,
    status: 200,
    response: z.object({ signedIn: z.boolean() }),
    errors: { 429: 'too many wrong admin tokens from this address: wait Retry-After seconds' },
    handle: async (_in, ctx, { request, reply }) => ({
      signedIn: ctx.tokenGuard.authenticate(request, reply, ctx.sessions) !== null,
    }),
  }),
  adminRoute({
    id: 'signOut',
    method: 'DELETE',
    path: '/session',
    summary: 'Signs the browser out: ends its session and clears the cookie.',
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
