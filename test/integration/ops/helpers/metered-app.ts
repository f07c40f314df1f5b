/**
 * The real voice server wired the way server/main.ts wires it (metrics observer, session counting,
 * health and metrics routes), on 127.0.0.1:0 with the fake LLM.
 */
import type { AddressInfo } from 'node:net';
import type { App } from '../../../../server/app.ts';
import { assembleServer } from '../../../../server/assemble.ts';
import { ConfigSchema, type Config } from '../../../../server/config.ts';
import type { Deps } from '../../../../server/deps.ts';
import { createLogger } from '../../../../server/logger.ts';
import type { ServerMetrics } from '../../../../features/metrics/server-metrics.ts';
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
    // A private database, not ./data of the checkout.
    store: { url: 'sqlite::memory:' },
    ...overrides,
  });
  const logs = createLogSink();
  const log = createLogger({ level: 'debug', logContent: false, destination: logs.stream });
  const server = await assembleServer(config, log, { mcpStartWaitMs: 15_000 });
  const { app, deps, metrics } = server;
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
    setReady: server.setReady,
    close: server.close,
  };
}
