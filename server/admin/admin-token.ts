/**
 * @module The admin token check: both sides hashed to a fixed length first and compared with
 * `timingSafeEqual`, so neither the token's content nor its length shows in the answer's timing.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

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
