/**
 * @module Serves the browser device client (web/device) at `/`. Plain static files: no build
 * step. The Opus WASM fallback for browsers without WebCodecs is served from node_modules.
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

function packageRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${from}: cannot find the web pages`);
  }
}

export async function webRoutes(app: FastifyInstance): Promise<void> {
  // A page load fetches a dozen files: their request lines go to debug, not to the operator's log.
  app.addHook('onRoute', markQuiet);
  await app.register(fastifyStatic, { root: PUBLIC_DIR, prefix: '/', index: ['index.html'], cacheControl: true, maxAge: 60_000 });
  // opusscript's browser-loadable build, for pages running where WebCodecs is missing.
  const require = createRequire(import.meta.url);
  let opusDir: string | undefined;
  try {
    opusDir = dirname(require.resolve('opusscript/package.json'));
  } catch {
    opusDir = undefined;
  }
  if (opusDir) {
    await app.register(fastifyStatic, { root: join(opusDir, 'build'), prefix: '/vendor/opusscript/', decorateReply: false });
  }
}
