/**
 * The real server with real providers (Silero VAD, pocketsphinx, espeak-ng, the openai SDK against
 * the fake OpenAI server) on 127.0.0.1:0, for end-to-end voice tests.
 */
import { LOOPBACK_CLIENTS } from './test-app.ts';
import type { App } from '../../server/app.ts';
import { assembleServer, type AssembledServer, type AssembleOptions } from '../../server/assemble.ts';
import { ConfigSchema, type Config } from '../../server/config.ts';
import type { Deps } from '../../server/deps.ts';
import type { MqttTransport } from '../../transport/mqtt/transport.ts';
import { createLogger } from '../../server/logger.ts';
import { createLogSink, type LogSink } from './log-sink.ts';
import { listenOnLoopback } from './listen.ts';

export interface VoiceApp {
  app: App;
  deps: Deps;
  /** Server-initiated speech, as assemble wires it. */
  push: AssembledServer['push'];
  config: Config;
  logs: LogSink;
  httpUrl: string;
  wsUrl: string;
  /** With `mqtt.enabled`: the broker and UDP socket (`mqtt.ports` are the bound ports). */
  mqtt?: MqttTransport;
  close(): Promise<void>;
}

function merge(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const cur = out[k];
    out[k] =
      typeof v === 'object' &&
      v !== null &&
      !Array.isArray(v) &&
      typeof cur === 'object' &&
      cur !== null &&
      !Array.isArray(cur)
        ? merge(cur as Record<string, unknown>, v as Record<string, unknown>)
        : v;
  }
  return out;
}

/**
 * `logs`: where the server logs go (default: an in-memory sink that keeps every line); `assemble`:
 * options of `assembleServer` (e.g. `onWorker`, to reach the worker threads).
 */
export async function startVoiceApp(
  llmUrl: string,
  overrides: Record<string, unknown> = {},
  logs: LogSink = createLogSink(),
  assemble: AssembleOptions = {},
): Promise<VoiceApp> {
  // A test that names no data directory gets a private in-memory database, not ./data of the checkout.
  const named = 'store' in overrides || 'dataDir' in ((overrides.server as Record<string, unknown> | undefined) ?? {});
  const config = ConfigSchema.parse(
    merge(
      {
        ...(named ? {} : { store: { url: 'sqlite::memory:' } }),
        llm: { baseURL: llmUrl, apiKey: '', model: 'fake-model', maxRetries: 0, timeoutMs: 5000 },
        logging: { level: 'debug' },
        // Test files run two at a time on two cores: the event-loop judge would refuse devices for
        // the machine's load, not the server's. Admission control has its own tests.
        server: { admission: { maxEventLoopDelayMs: 0 }, ...LOOPBACK_CLIENTS },
        // One media worker per test server (still the worker path): two test files run at once,
        // and each worker's start-up (engine load and warm-up) costs about a second of CPU.
        audio: { workers: 1 },
      },
      overrides,
    ),
  );
  const log = createLogger({
    level: config.logging.level,
    logContent: config.logging.logContent,
    destination: logs.stream,
  });
  // Wired exactly as server/main.ts wires it.
  const server = await assembleServer(config, log, assemble);
  const { httpUrl, wsUrl } = await listenOnLoopback(server.app);
  return {
    app: server.app,
    deps: server.deps,
    push: server.push,
    config,
    logs,
    httpUrl,
    wsUrl,
    ...(server.mqtt ? { mqtt: server.mqtt } : {}),
    close: server.close,
  };
}
