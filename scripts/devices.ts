/**
 * The owner's tool for activation mode: bind a device by the code it speaks, list, revoke.
 * It changes the same store the server uses (`store.url`), also while the server runs: OTA and the
 * activation poll read bindings from the store, so a device asking right after a bind or revoke
 * gets the new answer; a revoked device's open session ends within a second or two (the change
 * feed). It never creates a store: one that does not exist is named in the error.
 *
 *   npm run devices -- bind 123456
 *   npm run devices -- list
 *   npm run devices -- revoke <id | Device-Id | Client-Id>
 *
 * The store is the one of the usual configuration (--config FILE, XIAOZHI_CONFIG, ./config.yaml;
 * DATABASE_URL and XIAOZHI_DATA_DIR override), or the SQLite file --file PATH.
 */
import { parseArgs } from 'node:util';
import { ConfigError, ConfigSchema, loadConfig } from '../server/config.ts';
import { openConfiguredStore, storeLocation } from '../server/open-store.ts';
import { StoreError } from '../store/connect.ts';
import { cliLog } from './cli-log.ts';

const USAGE = 'usage: npm run devices -- bind CODE | list | revoke ID [--file PATH] [--config FILE]';

function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

/** The command words and the two options; anything else is a usage error. */
function parse(argv: string[]): { command?: string; arg?: string; file?: string; config?: string } {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: { file: { type: 'string' }, config: { type: 'string' } },
      allowPositionals: true,
      strict: true,
    });
  } catch {
    fail(USAGE);
  }
  const [command, arg, extra] = parsed.positionals;
  const wellFormed =
    command === 'list' ? arg === undefined : (command === 'bind' || command === 'revoke') && arg !== undefined;
  if (!wellFormed || extra !== undefined) fail(USAGE);
  return { command, arg, file: parsed.values.file, config: parsed.values.config };
}

async function main(argv: string[]): Promise<void> {
  const { command, arg, file, config } = parse(argv);
  const cfg = file
    ? ConfigSchema.parse({ server: { dataDir: process.cwd() }, store: { url: `sqlite:${file}` } })
    : loadConfig({ argv: config === undefined ? [] : ['--config', config] }).config;
  // Which store, on every run: a wrong configuration shows at once. A store that does not exist
  // is refused (the server creates it), so a typo never binds into a new empty database.
  process.stderr.write(`devices: store ${storeLocation(cfg)}\n`);
  const store = await openConfiguredStore(cfg, cliLog, { watch: false, create: false });
  const devices = store.registry;
  try {
    if (command === 'bind' && arg) {
      const r = await devices.bind(arg);
      if (!r.ok) fail(`not bound: ${r.reason}`);
      process.stdout.write(`bound ${r.device.id} (Device-Id ${r.device.deviceId}, Client-Id ${r.device.clientId})\n`);
    } else if (command === 'list') {
      const { bound, pending } = await devices.list();
      for (const d of bound)
        process.stdout.write(`bound    ${d.id}  ${d.deviceId}  ${d.clientId}  since ${d.boundAt}\n`);
      for (const p of pending)
        process.stdout.write(
          `pending  code ${p.code}  ${p.deviceId}  ${p.clientId}  until ${new Date(p.expiresAt).toISOString()}\n`,
        );
      if (bound.length + pending.length === 0) process.stdout.write('no devices\n');
    } else if (command === 'revoke' && arg) {
      const gone = await devices.revoke(arg);
      if (gone.length === 0) fail(`no bound device matches ${arg}`);
      for (const d of gone) process.stdout.write(`revoked ${d.id} (${d.deviceId})\n`);
    } else {
      fail(USAGE);
    }
  } finally {
    await store.close();
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  fail(err instanceof ConfigError || err instanceof StoreError ? err.message : `devices: ${(err as Error).message}`);
});
