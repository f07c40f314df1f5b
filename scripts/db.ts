/**
 * The operator's database command, for those who run migrations apart from the server's start:
 *
 *   npm run db -- migrate      bring the schema of `store.url` up to date; print its version
 *
 * The database is the one of the usual configuration (--config FILE, XIAOZHI_CONFIG,
 * ./config.yaml; DATABASE_URL overrides store.url).
 */
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../server/config.ts';
import { openConfiguredStore, storeLocation } from '../server/open-store.ts';
import { StoreError } from '../store/connect.ts';
import { cliLog } from './cli-log.ts';

const USAGE = 'usage: npm run db -- migrate [--config FILE]';

function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

async function main(argv: string[]): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: { config: { type: 'string' } }, allowPositionals: true, strict: true });
  } catch {
    fail(USAGE);
  }
  const [command, extra] = parsed.positionals;
  if (command !== 'migrate' || extra !== undefined) fail(USAGE);
  const config = loadConfig({
    argv: parsed.values.config === undefined ? [] : ['--config', parsed.values.config],
  }).config;
  // Opening runs the migrations (under the migration lock) and the start-up repairs.
  const store = await openConfiguredStore(config, cliLog, { watch: false });
  try {
    process.stdout.write(`database ${storeLocation(config)} (${store.dialect}) at schema version ${store.version}\n`);
  } finally {
    await store.close();
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  fail(err instanceof ConfigError || err instanceof StoreError ? err.message : `db: ${(err as Error).message}`);
});
