/**
 * @module The admin API's known-client cookie: a random id with an HMAC of it under a key derived
 * from the admin token, given to a browser or script once it has presented the right token. Its
 * guesses at the token are counted under its id instead of its address, so strangers guessing
 * from behind the same address (a carrier or office NAT) cannot lock out an operator who has
 * signed in from that browser before, while the strangers' own guesses stay limited. Nobody
 * can make one without the token, and a new token voids them all. Nothing is kept on the server.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { adminCookie, readCookie } from './admin-sessions.ts';

export const KNOWN_CLIENT_COOKIE = 'xiaozhi_admin_client';
/** How long a browser stays known without proving the token again. */
export const KNOWN_CLIENT_MAX_AGE_S = 90 * 24 * 3600;

export class KnownClients {
  readonly #key: Buffer;

  constructor(adminToken: string) {
    this.#key = createHmac('sha256', adminToken).update('xiaozhi admin known client').digest();
  }

  #mac(id: string): Buffer {
    return createHmac('sha256', this.#key).update(id).digest();
  }

  /** The id of the known client this Cookie header carries, if its cookie is genuine. */
  idOf(cookieHeader: string | undefined): string | undefined {
    const value = readCookie(cookieHeader, KNOWN_CLIENT_COOKIE);
    const m = value === undefined ? null : /^([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/.exec(value);
    if (!m) return undefined;
    const [, id = '', mac = ''] = m;
    const got = Buffer.from(mac, 'base64url');
    const want = this.#mac(id);
    return got.length === want.length && timingSafeEqual(got, want) ? id : undefined;
  }

  /** The Set-Cookie value making the caller a new known client. */
  issue(secure: boolean): string {
    const id = randomBytes(16).toString('base64url');
    return adminCookie(
      KNOWN_CLIENT_COOKIE,
      `${id}.${this.#mac(id).toString('base64url')}`,
      KNOWN_CLIENT_MAX_AGE_S,
      secure,
      '/api/admin',
    );
  }
}
