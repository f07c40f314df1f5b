/**
 * @module Serves the browser device client (server/public) at `/`. Plain static files: no build
 * step. The Opus WASM fallback for browsers without WebCodecs is served from node_modules.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import type { FastifyInstance } from 'fastify';
import fastifyStatic from '@fastify/static';

export const PUBLIC_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'public');

export async function webRoutes(app: FastifyInstance): Promise<void> {
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
