/**
 * @module The admin API (`/api/admin/`) and the console (`/admin`), on only when `admin.token` is
 * set. Every request from a foreign browser origin is refused (403); every route but the sign-in
 * needs the token as a bearer or the console's session cookie, and a cookie-authenticated change
 * must also come from the console's own origin (a browser sends `Origin` on every such request).
 * Params and bodies are validated by the route table's zod schemas: a 400 names the field.
 */
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import type { z } from 'zod';
import { createOriginCheck } from '../identity/index.ts';
import type { SessionRegistry } from '../../voice/session/registry.ts';
import type { AdminStore } from './admin-store.ts';
import { AdminSessions } from './admin-sessions.ts';
import { AdminTokenGuard } from './admin-token.ts';
import { SignInLimit } from './sign-in-limit.ts';
import { AdminError, fastifyPath, type AdminContext, type AdminRoute } from './route.ts';
import { ADMIN_ROUTES } from './routes.ts';
import { ADMIN_PREFIX } from './openapi.ts';
import { apiKeysOf } from './agent-views.ts';

export interface AdminOptions {
  /** `admin.token`; empty: the admin API and console are off. */
  token: string;
  /** Serves the console's files at `/admin/` (the HTTP shell serves every page of `web/`). */
  consoleRoutes: (app: FastifyInstance) => Promise<void>;
  store: AdminStore;
  /** This process's live sessions, for `online`. */
  liveSessions: SessionRegistry;
  /** Where secrets met at run time go (agents' API keys), for log redaction by value. */
  onSecret?: (value: string) => void;
  /** How long a console sign-in lasts. */
  sessionTtlMs?: number;
  /** Sign-in attempts per address: `burst` at once, then `perMinute`. */
  signIn?: { burst: number; perMinute: number };
  /** The MCP endpoint's bridges and the URL base handed out (`mcpEndpoint.publicUrl`). */
  mcpEndpoint?: AdminContext['mcpEndpoint'];
  /** Server-initiated speech (`say`). */
  push?: AdminContext['push'];
  /** The camera endpoint: its models per agent, the kept photos. */
  vision?: AdminContext['vision'];
}

/** `where.path: message` for every issue; the first issue's path is the field named. */
function invalid(where: 'params' | 'body', error: z.ZodError): AdminError {
  const paths = error.issues.map((i) => [where, ...i.path.map(String)].join('.'));
  const message = error.issues.map((i, n) => `${paths[n]}: ${i.message}`).join('; ');
  return new AdminError(400, message, paths[0]);
}

function parse<S extends z.ZodType>(schema: S, value: unknown, where: 'params' | 'body'): z.output<S> {
  const r = schema.safeParse(value);
  if (!r.success) throw invalid(where, r.error);
  return r.data;
}

function send(reply: FastifyReply, status: number, body: unknown): FastifyReply {
  return reply.code(status).header('Cache-Control', 'no-store').send(body);
}

export function adminPlugin(opts: AdminOptions): (app: FastifyInstance) => Promise<void> {
  return async (app) => {
    if (!opts.token) {
      app.log.info(
        'admin API and console off: set admin.token (env ADMIN_TOKEN, at least 16 characters) to turn on /api/admin/ and the console at /admin',
      );
      return;
    }
    const ctx: AdminContext = {
      store: opts.store,
      token: opts.token,
      sessions: new AdminSessions({ ttlMs: opts.sessionTtlMs ?? 12 * 3600_000, max: 1000 }),
      tokenGuard: new AdminTokenGuard({
        token: opts.token,
        limit: new SignInLimit(opts.signIn ?? { burst: 5, perMinute: 5 }),
        log: app.log,
      }),
      localOnline: () => opts.liveSessions.list().flatMap((s) => (s.deviceId ? [s.deviceId] : [])),
      onSecret: (v) => opts.onSecret?.(v),
      log: app.log,
      ...(opts.mcpEndpoint ? { mcpEndpoint: opts.mcpEndpoint } : {}),
      ...(opts.push ? { push: opts.push } : {}),
      ...(opts.vision ? { vision: opts.vision } : {}),
    };
    // Keys stored by earlier runs (or another replica) are redacted from the first line on.
    try {
      for (const a of await opts.store.agents.list()) {
        for (const key of apiKeysOf(a.settings)) ctx.onSecret(key);
      }
    } catch (err) {
      app.log.warn({ err }, 'admin: could not read the agents to register their keys for redaction');
    }

    await app.register(opts.consoleRoutes);
    await app.register(
      async (api) => {
        const refusedOrigin = createOriginCheck([], 'admin API');
        api.addHook('onRequest', async (request, reply) => {
          const fix = refusedOrigin(request);
          if (fix !== null) return send(reply, 403, { error: 'requests from other origins are refused', fix });
        });
        api.setErrorHandler((err: FastifyError, request, reply) => {
          if (err instanceof AdminError)
            return send(reply, err.status, { error: err.message, ...(err.field ? { field: err.field } : {}) });
          // Fastify's own: a body that is not JSON, too large, an unsupported content type.
          if (err.statusCode && err.statusCode < 500) return send(reply, err.statusCode, { error: err.message });
          request.log.error({ err }, 'admin: request failed');
          return send(reply, 500, { error: 'internal error (logged)' });
        });
        api.setNotFoundHandler((_request, reply) => send(reply, 404, { error: 'no such admin route' }));
        for (const r of ADMIN_ROUTES) registerRoute(api, r, ctx);
      },
      { prefix: ADMIN_PREFIX },
    );
    app.log.info('admin API on /api/admin/ (OpenAPI at /api/admin/openapi.json), console at /admin');
  };
}

function registerRoute(api: FastifyInstance, r: AdminRoute, ctx: AdminContext): void {
  api.route({
    method: r.method,
    url: fastifyPath(r.path),
    handler: async (request, reply) => {
      if (r.auth) {
        // A bearer token is a guess at the admin token like a sign-in (AdminTokenGuard).
        const how = ctx.tokenGuard.authenticate(request, reply, ctx.sessions);
        if (!how) {
          reply.header('WWW-Authenticate', 'Bearer realm="xiaozhi admin"');
          throw new AdminError(401, 'admin token or console sign-in required');
        }
        // SameSite=Strict already keeps the cookie off cross-site requests; a change must also
        // show it comes from the console's own page (the foreign case was refused above).
        if (how === 'cookie' && r.method !== 'GET' && request.headers.origin === undefined) {
          throw new AdminError(
            403,
            'a change made with the console cookie must come from the console (no Origin header)',
          );
        }
      }
      const params = r.params ? parse(r.params, request.params, 'params') : undefined;
      const body = r.body ? parse(r.body, request.body, 'body') : undefined;
      const result = await r.handle({ params, body }, ctx, { request, reply });
      return r.status === 204 ? send(reply, 204, undefined) : send(reply, r.statusOf?.(result) ?? r.status, result);
    },
  });
}
