/**
 * @module Entry point: load the configuration, build the dependencies and the app, listen, and
 * shut down gracefully on SIGTERM/SIGINT (stop accepting, let turns finish up to the drain
 * deadline, close every session and child process, exit 0). npm's forwarded copy of a signal is
 * not a second request (shutdown-signals.ts); a real second request exits at once.
 */
import { ErrorCode, VoiceError } from '../core/errors.ts';
import { ConfigError, loadConfig } from './config.ts';
import { createLogger } from './logger.ts';
import { SecretValues } from '../core/secret-values.ts';
import { registerConfigSecrets } from '../core/config-secrets.ts';
import { assembleServer } from './assemble.ts';
import { logDeviceAuth } from '../features/identity/index.ts';
import { storeLocation } from './open-store.ts';
import { StoreError } from '../store/connect.ts';
import { languageWarnings } from '../features/agents/index.ts';
import { REPEAT_WINDOW_MS, ShutdownSignals } from './shutdown-signals.ts';

/** Exit code for configuration errors (documented in the README). */
const EXIT_CONFIG = 2;
/** How much longer than the drain deadline we wait for providers and MCP children before forcing exit. */
const CLOSE_GRACE_MS = 1000;

async function main(): Promise<void> {
  let loaded;
  try {
    loaded = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`xiaozhi-server: ${err.message}\n`);
      process.exit(EXIT_CONFIG);
    }
    throw err;
  }
  const { config } = loaded;
  // Every secret in the configuration is redacted by value from every log line.
  const secrets = new SecretValues();
  registerConfigSecrets(secrets, config);
  const log = createLogger({ level: config.logging.level, logContent: config.logging.logContent, secrets });
  log.info({ file: loaded.file ?? '(embedded defaults)', overrides: loaded.overrides }, 'configuration loaded');
  for (const w of loaded.warnings) log.warn({ file: loaded.file }, w);
  for (const w of languageWarnings(config)) log.warn({ key: w.key }, w.message);

  // Run-time secrets (the device-token secret, every token OTA issues) are redacted like configured ones.
  const server = await assembleServer(config, log, {
    onSecret: (v, issued) => secrets.add(v, { issued: issued === true }),
  });
  const { app, deps } = server;
  logDeviceAuth(config.server.auth, storeLocation(config), app.devices, log);
  const signals = new ShutdownSignals();
  await app.fastify.listen({ host: config.server.host, port: config.server.port });
  log.info(
    {
      ota: `http://<this-host>:${config.server.port}/xiaozhi/ota/`,
      ws: config.server.publicWsUrl || `ws://<Host header>/xiaozhi/v1/`,
    },
    'server ready: set the device OTA URL to the ota address',
  );

  const stop = (signal: string): void => {
    const verdict = signals.receive();
    if (verdict === 'duplicate') {
      log.info(
        { signal, windowMs: REPEAT_WINDOW_MS },
        'signal repeated at once (npm forwards its copy): still draining; signal again to exit now',
      );
      return;
    }
    if (verdict === 'force') {
      log.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    server.setReady(false);
    log.info({ signal, drainMs: config.server.drainTimeoutMs }, 'shutting down');
    const force = setTimeout(() => {
      log.warn('shutdown deadline passed; exiting');
      process.exit(0);
    }, config.server.drainTimeoutMs + CLOSE_GRACE_MS);
    force.unref();
    // No reminder is claimed while the sessions drain; push's timers stop with the app.
    Promise.resolve(server.reminders?.stop())
      .then(() => app.shutdown(config.server.drainTimeoutMs))
      .then(() => server.push.close())
      .then(() => deps.close())
      .then(() => {
        log.info('stopped');
        log.flush?.();
        process.exit(0);
      })
      .catch((err: unknown) => {
        log.error({ err }, 'error during shutdown');
        process.exit(1);
      });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((err: unknown) => {
  // A provider that refuses its configuration at start (an unknown espeak voice, a bad grammar
  // file) is a configuration error too: same exit code, message without a stack.
  if (err instanceof VoiceError && err.code === ErrorCode.ConfigInvalid) {
    process.stderr.write(`xiaozhi-server: invalid configuration: ${err.message}\n`);
    process.exit(EXIT_CONFIG);
  }
  // A database that cannot be opened: the message names store.url (its password hidden).
  if (err instanceof StoreError) {
    process.stderr.write(`xiaozhi-server failed to start: ${err.message}\n`);
    process.exit(1);
  }
  process.stderr.write(
    `xiaozhi-server failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});
