/**
 * The real voice server wired the way server/main.ts wires it (metrics observer, session counting,
 * health and metrics routes), on 127.0.0.1:0 with the fake LLM.
 */
import type { AddressInfo } from 'node:net';
import { buildApp, type App } from '../../../../server/app.ts';
import { ConfigSchema, type Config } from '../../../../server/config.ts';
import { createDeps, type Deps } from '../../../../server/deps.ts';
import { healthRoutes, providerChecks } from '../../../../server/http/health-route.ts';
import { metricsRoute } from '../../../../server/http/metrics-route.ts';
import { createLogger } from '../../../../server/logger.ts';
import { createServerMetrics, type ServerMetrics } from '../../../../server/metrics.ts';
import { SessionRegistry } from '../../../../server/session/registry.ts';
import { createLogSink, type LogSink } from '../../../helpers/log-sink.ts';

export interface MeteredApp {
  app: App;
  deps: Deps;
  config: Config;
  metrics: ServerMetrics;
  logs: LogSink;
  httpUrl: string;
  wsUrl: string;
  /** Flip to make /readyz answer 503 (what main.ts does on SIGTERM). */
  setReady(ready: boolean): void;
  close(): Promise<void>;
}

export async function startMeteredApp(llmUrl: string, overrides: Record<string, unknown> = {}): Promise<MeteredApp> {
  const config = ConfigSchema.parse({
    llm: { baseURL: llmUrl, apiKey: '', model: 'fake-model', maxRetries: 0, timeoutMs: 5000 },
    ...overrides,
  });
  const logs = createLogSink();
  const log = createLogger({ level: 'debug', logContent: false, destination: logs.stream });
  const metrics = createServerMetrics({ mcpServerNames: Object.keys(config.mcpServers) });
  const deps = await createDeps(config, log, { observer: metrics.observer, mcpStartWaitMs: 15_000 });
  const registry = new SessionRegistry();
  metrics.bind({ mcp: deps.mcp, activeSessions: () => registry.size });
  let ready = true;
  const app = await buildApp({
    config,
    log,
    registry,
    createConversation: metrics.countSessions(deps.createConversation),
    onRefused: (reason) => metrics.connectionRefused(reason),
    plugins: [healthRoutes({ mcp: deps.mcp, ready: () => ready, checks: providerChecks(config) }), metricsRoute({ metrics })],
  });
  await app.fastify.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.fastify.server.address() as AddressInfo).port;
  return {
    app,
    deps,
    config,
    metrics,
    logs,
    httpUrl: `http://127.0.0.1:${port}`,
    wsUrl: `ws://127.0.0.1:${port}/xiaozhi/v1/`,
    setReady: (r) => {
      ready = r;
    },
    close: async () => {
      await app.fastify.close();
      await deps.close();
      metrics.close();
    },
  };
}
