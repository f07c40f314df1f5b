/**
 * @module Liveness and readiness: `/healthz` answers while the process runs; `/readyz` also reports
 * the MCP servers' state and says 503 while the server is not ready (starting or draining).
 */
import type { FastifyInstance } from 'fastify';
import type { McpManager } from '../../mcp/manager.ts';

export interface HealthOptions {
  mcp?: Pick<McpManager, 'status'>;
  ready: () => boolean;
}

export function healthRoutes(opts: HealthOptions) {
  return async (app: FastifyInstance): Promise<void> => {
    app.get('/healthz', async () => ({ status: 'ok' }));
    app.get('/readyz', async (_req, reply) => {
      const mcp = opts.mcp?.status() ?? [];
      const ready = opts.ready();
      await reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not_ready', mcpServers: mcp });
    });
  };
}
