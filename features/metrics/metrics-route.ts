/**
 * @module `GET /metrics`: the app's Prometheus registry in the text exposition format. Scrapes are
 * logged at warn level only, so a 15 s scrape interval does not flood the logs.
 */
import type { FastifyInstance } from 'fastify';
import type { ServerMetrics } from './server-metrics.ts';

export interface MetricsRouteOptions {
  metrics: Pick<ServerMetrics, 'render'>;
  /** Path to serve on. Default `/metrics`. */
  path?: string;
}

/** A route plugin for `buildApp({ plugins })`. */
export function metricsRoute(opts: MetricsRouteOptions) {
  return async (app: FastifyInstance): Promise<void> => {
    app.get(opts.path ?? '/metrics', { logLevel: 'warn' }, async (_req, reply) => {
      const { contentType, body } = await opts.metrics.render();
      await reply.header('content-type', contentType).header('cache-control', 'no-store').send(body);
    });
  };
}
