/**
 * @module The console's signed-in browsers: a random id per sign-in, kept in memory with an
 * expiry, carried by an HttpOnly cookie. Only a hash of each id is kept, so a heap dump holds no
 * usable cookie. Bounded: beyond `max` the oldest sign-in is dropped. A restart signs everyone
 * out (the admin token signs in again).
 */
import { createHash, randomBytes } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { makeRoom } from '../../core/bounded-map.ts';

export const ADMIN_COOKIE = 'xiaozhi_admin';

export interface AdminSessionsOptions {
  ttlMs: number;
  max: number;
  now?: () => number;
}

function digest(id: string): string {
  return createHash('sha256').update(id).digest('base64url');
}

export class AdminSessions {
  /** hash of the id → expiry (ms since epoch), oldest first. */
  readonly #expiry = new Map<string, number>();
  readonly #opts: AdminSessionsOptions;
  readonly #now: () => number;

  constructor(opts: AdminSessionsOptions) {
    this.#opts = opts;
    this.#now = opts.now ?? Date.now;
  }

  get size(): number {
    return this.#expiry.size;
  }

  /** A new signed-in session: its id (for the cookie) and when it expires. */
  create(): { id: string; expiresAt: number } {
    this.#sweep();
    makeRoom(this.#expiry, this.#opts.max);
    const id = randomBytes(32).toString('base64url');
    const expiresAt = this.#now() + this.#opts.ttlMs;
    this.#expiry.set(digest(id), expiresAt);
    return { id, expiresAt };
  }

  /** The session's expiry when `id` is a live session, else undefined (an expired one is forgotten). */
  check(id: string): number | undefined {
    const key = digest(id);
    const exp = this.#expiry.get(key);
    if (exp === undefined) return undefined;
    if (exp <= this.#now()) {
      this.#expiry.delete(key);
      return undefined;
    }
    return exp;
  }

  end(id: string): void {
    this.#expiry.delete(digest(id));
  }

  #sweep(): void {
    const now = this.#now();
    for (const [k, exp] of this.#expiry) if (exp <= now) this.#expiry.delete(k);
  }
}

/** The value of cookie `name` in a Cookie header, or undefined. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** A Set-Cookie value kept from scripts and other sites (`maxAgeS` 0 clears it); Secure when reached over https. */
export function adminCookie(name: string, value: string, maxAgeS: number, secure: boolean, path = '/'): string {
  return [
    `${name}=${value}`,
    `Path=${path}`,
    'HttpOnly',
    'SameSite=Strict',
    `Max-Age=${maxAgeS}`,
    ...(secure ? ['Secure'] : []),
  ].join('; ');
}

/** The Set-Cookie value for a session (`maxAgeS` 0 clears it). Secure when the console was reached over https. */
export function sessionCookie(value: string, maxAgeS: number, secure: boolean): string {
  return adminCookie(ADMIN_COOKIE, value, maxAgeS, secure);
}

/** The console was reached over https (directly, or through a proxy that says so). */
export function overHttps(request: FastifyRequest): boolean {
  const forwarded = String(request.headers['x-forwarded-proto'] ?? '')
    .split(',')[0]
    ?.trim();
  return request.protocol === 'https' || forwarded === 'https';
}
