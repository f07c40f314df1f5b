/**
 * @module Liveness and readiness.
 * - `GET /healthz`: 200 while the process serves HTTP (the container HEALTHCHECK uses it).
 * - `GET /readyz`: 503 `not_ready` while starting or draining (so a load balancer stops sending
 *   devices); otherwise 200 with `ready`, or `degraded` when an MCP server is not connected or a
 *   provider endpoint does not accept connections. A dependency outage never fails readiness:
 *   the server still answers devices (with an apology), and restarting it would not help.
 * Only the status is public: the details (error texts of remote services, provider host:port,
 * MCP server states) go to loopback callers that are not proxied, or with the admin secret.
 * Provider checks are TCP connects (no tokens spent, no auth needed), cached so probes cannot
 * hammer a provider.
 */
import { connect } from 'node:net';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { runScoped } from '../core/abort.ts';
import { asrProvider, ttsProvider } from '../providers/index.ts';
import { isAdmin, SignInLimit } from '../features/admin/index.ts';
import type { McpManager } from '../mcp/manager.ts';
import type { Config } from './config.ts';
import type { ProviderProblem } from '../providers/doctor.ts';

/** One cheap dependency check shown in `/readyz`. */
export interface ReadinessCheck {
  /** Shown in the body, e.g. `llm`. */
  name: string;
  /** What is checked (a host:port), for the body. */
  target: string;
  /** Resolves when reachable, rejects saying why not. Must stop when `signal` aborts. */
  check(signal: AbortSignal): Promise<void>;
}

export interface HealthOptions {
  mcp?: Pick<McpManager, 'status'>;
  /** False while starting or draining: `/readyz` answers 503. */
  ready: () => boolean;
  checks?: readonly ReadinessCheck[];
  /** How long a check result is reused, ms. Default 10 000. */
  checkCacheMs?: number;
  /** Bound on one check, ms. Default 2 000. */
  checkTimeoutMs?: number;
  /**
   * Provider problems with their fix (`problems` in the body, for the browser page's banner).
   * Public by design: component, problem kind and config keys to set, never hosts or remote text.
   */
  problems?: () => Promise<readonly ProviderProblem[]>;
  /** `server.adminSecret`: with it, a remote caller sees the details too. Empty: loopback only. */
  adminSecret?: string;
}

export interface CheckResult {
  name: string;
  target: string;
  ok: boolean;
  error?: string;
  /** Age of this result, ms (results are cached for `checkCacheMs`). */
  ageMs: number;
}

/** Resolves when a TCP connection to host:port opens; the socket is closed at once. */
export function tcpConnect(host: string, port: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason as Error);
      return;
    }
    const socket = connect({ host, port });
    const done = (err?: Error): void => {
      signal.removeEventListener('abort', onAbort);
      socket.destroy();
      if (err) reject(err);
      else resolve();
    };
    const onAbort = (): void => done(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    socket.once('connect', () => done());
    socket.once('error', (err) => done(err));
  });
}

/** A TCP reachability check for an http(s) endpoint; null for a URL it cannot parse. */
export function endpointCheck(name: string, url: string): ReadinessCheck | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
  const port = u.port ? Number(u.port) : u.protocol === 'https:' ? 443 : 80;
  const host = u.hostname.replace(/^\[|\]$/g, '');
  return { name, target: `${host}:${port}`, check: (signal) => tcpConnect(host, port, signal) };
}

/** Checks for the configured remote providers (the LLM, and ASR/TTS when they are OpenAI-compatible). */
export function providerChecks(config: Pick<Config, 'llm' | 'asr' | 'tts'>): ReadinessCheck[] {
  const out: Array<ReadinessCheck | null> = [endpointCheck('llm', config.llm.baseURL)];
  const asr = asrProvider(config.asr).endpoint(config.asr);
  const tts = ttsProvider(config.tts).endpoint(config.tts);
  if (asr) out.push(endpointCheck('asr', asr.baseURL));
  if (tts) out.push(endpointCheck('tts', tts.baseURL));
  return out.filter((c): c is ReadinessCheck => c !== null);
}

/** Runs checks with a per-check cache and shares a run in progress between concurrent probes. */
function createCheckRunner(checks: readonly ReadinessCheck[], cacheMs: number, timeoutMs: number) {
  const cache = new Map<string, { at: number; ok: boolean; error?: string }>();
  const running = new Map<string, Promise<void>>();
  const runOne = (c: ReadinessCheck): Promise<void> => {
    const inFlight = running.get(c.name);
    if (inFlight) return inFlight;
    const p = runScoped(undefined, (s) => c.check(s), { timeoutMs, what: `readiness check ${c.name}` })
      .then(
        () => void cache.set(c.name, { at: Date.now(), ok: true }),
        (err: unknown) =>
          void cache.set(c.name, {
            at: Date.now(),
            ok: false,
            error: err instanceof Error ? err.message : String(err),
          }),
      )
      .finally(() => running.delete(c.name));
    running.set(c.name, p);
    return p;
  };
  return async (): Promise<CheckResult[]> => {
    const now = Date.now();
    await Promise.all(checks.filter((c) => (cache.get(c.name)?.at ?? -Infinity) + cacheMs <= now).map(runOne));
    return checks.map((c) => {
      const r = cache.get(c.name) ?? { at: Date.now(), ok: false, error: 'not checked' };
      return {
        name: c.name,
        target: c.target,
        ok: r.ok,
        ...(r.error ? { error: r.error } : {}),
        ageMs: Date.now() - r.at,
      };
    });
  };
}

/** A route plugin for `buildApp({ plugins })`: `/healthz` and `/readyz`. */
export function healthRoutes(opts: HealthOptions) {
  const runChecks = createCheckRunner(opts.checks ?? [], opts.checkCacheMs ?? 10_000, opts.checkTimeoutMs ?? 2_000);
  // Guesses at server.adminSecret: as many as at the admin token, per address.
  const secretGuesses = new SignInLimit({ burst: 5, perMinute: 5 });
  return async (app: FastifyInstance): Promise<void> => {
    // Probes every few seconds would flood the info log; errors are still logged.
    app.get('/healthz', { logLevel: 'warn' }, async () => ({ status: 'ok' }));
    app.get('/readyz', { logLevel: 'warn' }, async (req: FastifyRequest, reply) => {
      const details = isAdmin(req, opts.adminSecret ?? '', secretGuesses);
      const mcpServers = opts.mcp?.status() ?? [];
      if (!opts.ready()) {
        // Problems (with their fix) are public: the browser page shows them; everything else is
        // for admins (server.adminSecret) or loopback.
        await reply
          .code(503)
          .send(
            details
              ? { status: 'not_ready', mcpServers, checks: [], problems: [] }
              : { status: 'not_ready', problems: [] },
          );
        return;
      }
      const [checks, problems] = await Promise.all([runChecks(), opts.problems?.() ?? []]);
      const degraded = checks.some((c) => !c.ok) || problems.length > 0 || mcpServers.some((s) => s.state !== 'ready');
      const status = degraded ? 'degraded' : 'ready';
      await reply.code(200).send(details ? { status, mcpServers, checks, problems } : { status, problems });
    });
  };
}
