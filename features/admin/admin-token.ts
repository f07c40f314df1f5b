/**
 * @module Who is calling the admin API: the bearer token or a console session cookie. The token check: both sides hashed to a fixed length first and compared with
 * `timingSafeEqual`, so neither the token's content nor its length shows in the answer's timing.
 * Every presented token, whichever route it reaches (the sign-in, `GET /session`, any other),
 * goes through one `AdminTokenGuard`: a wrong one spends a guess, and a caller with none left gets
 * 429 before the comparison. Guesses are counted per address, or per known client
 * (known-clients.ts) for a browser or script that proved the token before.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from '../../core/logger.ts';
import { createLogRateLimit } from '../../core/log-rate-limit.ts';
import { ADMIN_COOKIE, overHttps, readCookie, type AdminSessions } from './admin-sessions.ts';
import { KnownClients } from './known-clients.ts';
import type { SignInLimit } from './sign-in-limit.ts';
import { AdminError } from './route.ts';
import { addressKey, clientAddress } from '../../core/address-key.ts';

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

export class AdminTokenGuard {
  readonly #token: string;
  readonly #limit: SignInLimit;
  readonly #known: KnownClients;
  /** Strangers guess in floods: a few lines a second, each saying how many were left out. */
  readonly #log: Logger;

  constructor(opts: { token: string; limit: SignInLimit; log: Logger }) {
    this.#token = opts.token;
    this.#limit = opts.limit;
    this.#known = new KnownClients(opts.token);
    this.#log = createLogRateLimit({ perSecond: 1, burst: 5 }).wrap(opts.log);
  }

  /**
   * Whether `presented` is the admin token. Throws 429 (with Retry-After) when the caller has no
   * guess left, without comparing; a wrong token spends one. A right one makes the caller a known
   * client, if it is not one yet.
   */
  check(presented: string, request: FastifyRequest, reply: FastifyReply): boolean {
    const client = this.#known.idOf(request.headers.cookie);
    const key = client === undefined ? addressKey(request) : `known client ${client}`;
    const who = { address: clientAddress(request), ...(client === undefined ? {} : { knownClient: true }) };
    const r = this.#limit.attempt(key, () => tokenMatches(presented, this.#token));
    if (r === 'over') {
      this.#log.warn(who, 'admin: wrong admin tokens over the limit');
      reply.header('Retry-After', String(this.#limit.retryAfterS));
      throw new AdminError(429, `too many wrong admin tokens: try again in ${this.#limit.retryAfterS} s`);
    }
    if (r === 'wrong') {
      this.#log.warn(
        { ...who, route: `${request.method} ${request.routeOptions.url ?? request.url}` },
        'admin: wrong admin token',
      );
      return false;
    }
    if (client === undefined) reply.header('Set-Cookie', this.#known.issue(overHttps(request)));
    return true;
  }

  /** How the request is authenticated: the bearer token (checked by `check`), a live console session cookie, or not at all. */
  authenticate(request: FastifyRequest, reply: FastifyReply, sessions: AdminSessions): 'bearer' | 'cookie' | null {
    const bearer = bearerToken(request.headers.authorization);
    if (bearer !== undefined) return this.check(bearer, request, reply) ? 'bearer' : null;
    // A session id is 32 random bytes: not guessable, so no guess is counted.
    const id = readCookie(request.headers.cookie, ADMIN_COOKIE);
    return id && sessions.check(id) !== undefined ? 'cookie' : null;
  }
}
