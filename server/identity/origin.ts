/**
 * @module Which browser origins may call OTA and open the device WebSocket: the server's own page
 * (same scheme-less host as the request) and `server.allowedOrigins`. Devices send no Origin and
 * are never affected; a request with a foreign Origin is refused, so a page elsewhere can neither
 * read an OTA answer nor open a socket with a visitor's network position.
 */
import type { FastifyRequest } from 'fastify';

export function originAllowed(request: FastifyRequest, allowed: readonly string[]): boolean {
  const origin = request.headers.origin;
  if (origin === undefined) return true;
  let host: string;
  try {
    host = new URL(origin).host;
  } catch {
    return false;
  }
  // Same origin: the page was served by this host (behind a proxy, the host it forwards).
  const forwarded = String(request.headers['x-forwarded-host'] ?? '').split(',')[0]?.trim();
  if (host === request.headers.host || (forwarded && host === forwarded)) return true;
  return allowed.some((a) => {
    try {
      return new URL(a).origin === new URL(origin).origin;
    } catch {
      return false;
    }
  });
}
