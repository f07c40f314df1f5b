/** Builds the real app on 127.0.0.1:0 with a config assembled from overrides, and closes it after the test. */
import { buildApp, type App, type AppDeps } from '../../server/app.ts';
import { ConfigSchema, type Config } from '../../server/config.ts';
import { createLogger } from '../../server/logger.ts';
import { SecretValues } from '../../core/secret-values.ts';
import { registerConfigSecrets } from '../../core/config-secrets.ts';
import type { ConversationFactory } from '../../voice/session/conversation.ts';
import { createLogSink, type LogSink } from './log-sink.ts';
import { listenOnLoopback } from './listen.ts';

/** Per-IP limits lifted: tests (and the simulator) run many devices from one loopback address. */
export const LOOPBACK_CLIENTS = { maxSessionsPerIp: 0, upgradeRate: { perSecond: 1_000_000, burst: 1_000_000 } };

export interface TestApp {
  app: App;
  config: Config;
  logs: LogSink;
  port: number;
  httpUrl: string;
  wsUrl: string;
  close(): Promise<void>;
}

export interface TestAppOptions {
  config?: Record<string, unknown>;
  createConversation: ConversationFactory;
  plugins?: AppDeps['plugins'];
  /** Where the server logs go (default: an in-memory sink that keeps every line). */
  logs?: LogSink;
}

export async function startTestApp(opts: TestAppOptions): Promise<TestApp> {
  const given = opts.config ?? {};
  // Every test device comes from 127.0.0.1: the per-IP limits are off unless a test sets them
  // (they have their own tests in server-bounds.test.ts).
  const server = { ...LOOPBACK_CLIENTS, ...((given.server as Record<string, unknown> | undefined) ?? {}) };
  // A test that names no data directory gets a private in-memory database, not ./data of the checkout.
  const store = given.store ?? ('dataDir' in server ? undefined : { url: 'sqlite::memory:' });
  const config = ConfigSchema.parse({ ...given, server, ...(store ? { store } : {}) });
  const logs = opts.logs ?? createLogSink();
  const secrets = new SecretValues();
  registerConfigSecrets(secrets, config);
  const log = createLogger({ level: 'debug', logContent: false, destination: logs.stream, secrets });
  const app = await buildApp({ config, log, createConversation: opts.createConversation, plugins: opts.plugins });
  return { app, config, logs, ...(await listenOnLoopback(app)), close: () => app.fastify.close() };
}
