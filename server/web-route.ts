/**
 * @module Serves the browser device client (web/device) at `/`. Plain static files: no build
 * step. The Opus WASM fallback for browsers without WebCodecs is served from node_modules. Every
 * file goes out with a Content-Security-Policy and anti-framing and anti-sniffing headers.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import type { FastifyInstance } from 'fastify';
import fastifyStatic from '@fastify/static';
import { markQuiet } from './request-log.ts';

/**
 * The pages live in `web/` at the package root, beside `package.json`. Found by walking up from
 * this file, so the same code serves them from the sources (tsx) and from the compiled `dist/`
 * (`npm run build`), which holds no copy of them.
 */
export const PUBLIC_DIR = join(packageRoot(dirname(fileURLToPath(import.meta.url))), 'web', 'device');
/** The admin console (`/admin`), served the same way when the admin API is on. */
export const ADMIN_DIR = join(packageRoot(dirname(fileURLToPath(import.meta.url))), 'web', 'admin');

function packageRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${from}: cannot find the web pages`);
  }
}

/** What both pages allow alike: nothing from elsewhere, no plugins, no <base>, no forms, no frames. */
function policy(scriptSrc: string, connectSrc: string): string {
  return [
    "default-src 'self'",
    `script-src ${scriptSrc}`,
    `connect-src ${connectSrc}`,
    "img-src 'self' data:",
    "style-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/**
 * The page's policy: its own scripts only (ES modules, the AudioWorklet, the opusscript loader),
 * plus eval, because the Opus fallback's Emscripten glue compiles WASM and builds its embind
 * invokers with `new Function` (`'unsafe-eval'` also covers WASM; no page code evaluates strings).
 * Its own WebSocket and HTTP endpoints (and a ws:/wss: server URL the user types), the inline SVG
 * icon, and never inside a frame. The page has no inline scripts or styles, so none are allowed.
 */
export const PAGE_CSP = policy("'self' 'unsafe-eval'", "'self' ws: wss:");

/**
 * The console's policy: its own scripts and styles only (no eval, nothing inline), requests to
 * its own origin only, never inside a frame.
 */
export const ADMIN_CSP = policy("'self'", "'self'");

type HeaderSink = { setHeader(name: string, value: string): unknown };

/** Set on every file served for the page. */
function setPageHeaders(res: HeaderSink): void {
  setSecurityHeaders(res, PAGE_CSP);
}

function setSecurityHeaders(res: HeaderSink, csp: string): void {
  res.setHeader('Content-Security-Policy', csp);
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Referrer-Policy', 'no-referrer');
}

export async function webRoutes(app: FastifyInstance): Promise<void> {
  // A page load fetches a dozen files: their request lines go to debug, not to the operator's log.
  app.addHook('onRoute', markQuiet);
  await app.register(fastifyStatic, {
    root: PUBLIC_DIR,
    prefix: '/',
    index: ['index.html'],
    cacheControl: true,
    maxAge: 60_000,
    setHeaders: setPageHeaders,
  });
  // opusscript's browser-loadable build, for pages running where WebCodecs is missing.
  const require = createRequire(import.meta.url);
  let opusDir: string | undefined;
  try {
    opusDir = dirname(require.resolve('opusscript/package.json'));
  } catch {
    opusDir = undefined;
  }
  if (opusDir) {
    await app.register(fastifyStatic, {
      root: join(opusDir, 'build'),
      prefix: '/vendor/opusscript/',
      decorateReply: false,
      setHeaders: setPageHeaders,
    });
  }
}

/** The admin console's files at `/admin/` (`/admin` redirects there), with the console's policy. */
export async function adminConsoleRoutes(app: FastifyInstance): Promise<void> {
  app.addHook('onRoute', markQuiet);
  await app.register(fastifyStatic, {
    root: ADMIN_DIR,
    prefix: '/admin/',
    index: ['index.html'],
    decorateReply: false,
    // Small files; a new version reaches the operator on the next load.
    cacheControl: false,
    setHeaders: (res: HeaderSink) => {
      setSecurityHeaders(res, ADMIN_CSP);
      res.setHeader('Cache-Control', 'no-cache');
    },
  });
  // The address people type: relative links in the page need the trailing slash.
  app.get('/admin', (_request, reply) => reply.redirect('/admin/', 301));
}
