/**
 * @module What a browser may ask of this server. Devices send no Origin and are never affected.
 *
 * - The Host of a browser request (one with an Origin, on every route) must be one of the
 *   server's own names: `server.publicHosts`, the host of `server.publicWsUrl`, `localhost`, the
 *   machine's host name, loopback addresses and the machine's interface addresses. A DNS
 *   rebinding page is same-origin with itself (Origin and Host are both the attacker's name, now
 *   pointing here), so matching Origin against Host alone lets it in; its Host is not our name.
 *   Refused with 403 and a rate-limited warning naming `server.publicHosts`.
 * - Its Origin must be the server's own page (the same host as the request, or the host a proxy
 *   forwards) or one of `server.allowedOrigins`, so a page elsewhere can neither read an OTA
 *   answer nor open a socket with a visitor's network position. Refused with 403 and a
 *   rate-limited warning (`createOriginCheck`) whose fix, also in the answer for the page to
 *   show, names `server.allowedOrigins`, or the proxy setting when a proxy dropped the port.
 */
import { hostname as machineName, networkInterfaces } from 'node:os';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { createLogRateLimit } from '../../core/log-rate-limit.ts';
import { truncateForLog } from '../../core/log-fields.ts';
import { formatIp, isLoopback, parseIp } from '../../core/ip-address.ts';

export interface HostSettings {
  /** Names and addresses browsers reach this server by. */
  publicHosts: readonly string[];
  /** Its host is one of the server's names too. */
  publicWsUrl: string;
}

/** The host part of a Host header or URL host (`Name.Example:8000`, `[::1]:80`): lowercase, no port, brackets or trailing dot. */
export function hostName(host: string): string | null {
  let url: URL;
  try {
    url = new URL(`http://${host.trim()}/`);
  } catch {
    return null;
  }
  // Anything but a bare host[:port] (userinfo, a path) is not a Host header.
  if (url.username || url.password || url.pathname !== '/' || url.search || url.hash) return null;
  return url.hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '');
}

/** The names this server answers browsers to. */
export class OwnHosts {
  readonly #names: Set<string>;
  /** Listed addresses, in canonical form (`formatIp`). */
  readonly #addresses = new Set<string>();
  readonly #interfaces: () => string[];
  readonly #now: () => number;
  /** The interface addresses last read, and when (ms). */
  #read: { at: number; addresses: readonly string[] } | undefined;

  constructor(
    settings: HostSettings,
    interfaces: () => string[] = interfaceAddresses,
    now: () => number = () => performance.now(),
  ) {
    const machine = machineName().toLowerCase();
    this.#names = new Set(['localhost', machine, `${machine}.local`]);
    let wsHost: string | undefined;
    try {
      wsHost = settings.publicWsUrl ? new URL(settings.publicWsUrl).host : undefined;
    } catch {
      // An unparseable publicWsUrl names no host.
    }
    for (const h of [...settings.publicHosts, ...(wsHost ? [wsHost] : [])]) {
      // A bare IPv6 address has no port to strip; anything else is read like a Host header.
      const ip = parseIp(h) ?? parseIp(hostName(h) ?? '');
      if (ip) this.#addresses.add(formatIp(ip));
      else {
        const n = hostName(h);
        if (n) this.#names.add(n);
      }
    }
    this.#interfaces = interfaces;
    this.#now = now;
  }

  /** True when the Host header `host` names this server. */
  has(host: string | undefined): boolean {
    if (host === undefined) return false;
    const name = hostName(host);
    if (name === null) return false;
    if (this.#names.has(name)) return true;
    const ip = parseIp(name);
    if (!ip) return false;
    if (isLoopback(ip)) return true;
    const text = formatIp(ip);
    if (this.#addresses.has(text)) return true;
    return this.#interfaceAddresses().includes(text);
  }

  /**
   * Addresses come and go (DHCP, a VPN), so they are read again, but at most once a second: a
   * stranger's flood of requests naming unknown addresses costs no system call each.
   */
  #interfaceAddresses(): readonly string[] {
    const now = this.#now();
    if (!this.#read || now - this.#read.at > 1000) this.#read = { at: now, addresses: this.#interfaces() };
    return this.#read.addresses;
  }
}

function interfaceAddresses(): string[] {
  const out: string[] = [];
  for (const list of Object.values(networkInterfaces())) {
    for (const i of list ?? []) {
      const ip = parseIp(i.address);
      if (ip) out.push(formatIp(ip));
    }
  }
  return out;
}

function forwardedHost(request: FastifyRequest): string | undefined {
  const v = request.headers['x-forwarded-host'];
  const first = (Array.isArray(v) ? v[0] : v)?.split(',')[0]?.trim();
  return first || undefined;
}

/**
 * Refuses, on every route of `app`, a browser request whose Host (or forwarded host) is not one of
 * the server's names. Call before registering routes; children inherit the hook.
 */
export function guardBrowserHosts(app: FastifyInstance, settings: HostSettings, own = new OwnHosts(settings)): void {
  const warnings = createLogRateLimit({ perSecond: 1, burst: 1 });
  app.addHook('onRequest', async (request, reply) => {
    const origin = request.headers.origin;
    if (origin === undefined) return;
    const forwarded = forwardedHost(request);
    const claimed = forwarded === undefined ? [request.headers.host] : [request.headers.host, forwarded];
    const foreign = claimed.findIndex((h) => !own.has(h));
    if (foreign < 0) return;
    const fix = 'if browsers reach this server by that name, add it to server.publicHosts';
    warnings
      .wrap(request.log)
      .warn(
        { host: truncateForLog(claimed[foreign] ?? ''), origin: truncateForLog(origin), fix },
        "browser request refused: Host is not one of this server's names",
      );
    await reply.code(403).send({ error: 'host not allowed', fix });
    return reply;
  });
}

/** Where an Origin is checked; the admin API answers only its own console (allowedOrigins does not apply). */
export type OriginCheckedAt = 'OTA' | 'WebSocket' | 'admin API';

/**
 * What to set so that `origin` is let through, said for the operator (log) and the page (answer):
 * - the server's own name on another port: a reverse proxy passed Host without the port the
 *   browser used (nginx's `$host`), so the page no longer looks like the server's own;
 * - anything else: list it in `server.allowedOrigins` (not for the admin API).
 */
export function originFix(request: FastifyRequest, rawOrigin: string, at: OriginCheckedAt): string {
  let originHost: string | null = null;
  try {
    originHost = hostName(new URL(rawOrigin).host);
  } catch {
    // Not a URL: no page can be let in by it.
  }
  // A stranger chooses the Origin: what is repeated of it is cut.
  const origin = truncateForLog(rawOrigin) ?? '';
  const seen = [request.headers.host, forwardedHost(request)].filter((h): h is string => h !== undefined);
  if (originHost !== null && seen.some((h) => hostName(h) === originHost)) {
    return `${origin} is this server's own page on another port: a reverse proxy in front passes Host without the port the browser used; pass it unchanged (nginx: proxy_set_header Host $http_host) or set X-Forwarded-Host`;
  }
  if (at === 'admin API')
    return "the admin API answers only the console this server serves (server.allowedOrigins does not apply to it): open the console at the server's own address";
  return `if the page at ${origin} should use this server, add "${origin}" to server.allowedOrigins`;
}

/**
 * The Origin check of one route family (`originAllowed`), with its refusals logged: a warning
 * naming the fix, at most one a second (the next line counts those left out), so a page retrying
 * in a loop costs a few lines. Returns null when allowed, else the fix for the 403 answer.
 */
export function createOriginCheck(
  allowed: readonly string[],
  at: OriginCheckedAt,
): (request: FastifyRequest) => string | null {
  const warnings = createLogRateLimit({ perSecond: 1, burst: 1 });
  return (request) => {
    if (originAllowed(request, allowed)) return null;
    const origin = request.headers.origin ?? '';
    const fix = originFix(request, origin, at);
    const forwarded = forwardedHost(request);
    warnings.wrap(request.log).warn(
      {
        where: at,
        origin: truncateForLog(origin),
        host: truncateForLog(request.headers.host ?? ''),
        ...(forwarded ? { forwardedHost: truncateForLog(forwarded) } : {}),
        fix,
      },
      "browser request refused: Origin is not this server's page nor one of server.allowedOrigins",
    );
    return fix;
  };
}

/** True for a request with no Origin, from the server's own page, or from a listed origin. */
export function originAllowed(request: FastifyRequest, allowed: readonly string[]): boolean {
  const origin = request.headers.origin;
  if (origin === undefined) return true;
  let parsed: URL;
  try {
    parsed = new URL(origin);
  } catch {
    return false;
  }
  // Same origin: the page was served by this host (behind a proxy, the host it forwards). Both
  // are the server's own names (guardBrowserHosts).
  const host = parsed.host;
  const sameHost = (h: string | undefined): boolean => h !== undefined && h.toLowerCase() === host;
  if (sameHost(request.headers.host) || sameHost(forwardedHost(request))) return true;
  return allowed.some((a) => {
    try {
      return new URL(a).origin === parsed.origin;
    } catch {
      return false;
    }
  });
}
