/**
 * The owner's tool for activation mode: bind a device by the code it speaks, list, revoke.
 * It changes the same registry file the server uses (under its lock), also while the server runs;
 * the server notices within a second, and a revoked device's session ends.
 *
 *   npm run devices -- bind 123456
 *   npm run devices -- list
 *   npm run devices -- revoke <id | Device-Id | Client-Id>
 *
 * The registry file is `devices.json` in `server.dataDir` of the usual configuration (--config FILE,
 * XIAOZHI_CONFIG, ./config.yaml; XIAOZHI_DATA_DIR overrides the directory) or --file PATH.
 */
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../server/config.ts';
import { openDeviceRegistry } from '../server/app.ts';
import { JsonDeviceRegistry } from '../server/identity/json-device-registry.ts';

const USAGE = 'usage: npm run devices -- bind CODE | list | revoke ID [--file PATH] [--config FILE]';

function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

/** The command words and the two options; anything else is a usage error. */
function parse(argv: string[]): { command?: string; arg?: string; file?: string; config?: string } {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: { file: { type: 'string' }, config: { type: 'string' } }, allowPositionals: true, strict: true });
  } catch {
    fail(USAGE);
  }
  const [command, arg, extra] = parsed.positionals;
  const wellFormed = command === 'list' ? arg === undefined : (command === 'bind' || command === 'revoke') && arg !== undefined;
  if (!wellFormed || extra !== undefined) fail(USAGE);
  return { command, arg, file: parsed.values.file, config: parsed.values.config };
}

function main(argv: string[]): void {
  const { command, arg, file, config } = parse(argv);
  const devices = file
    ? new JsonDeviceRegistry({ file, secret: '', codeTtlMs: 0, watchIntervalMs: 0 })
    : openDeviceRegistry(loadConfig({ argv: config === undefined ? [] : ['--config', config] }).config, 0);
  try {
    if (command === 'bind' && arg) {
      const r = devices.bind(arg);
      if (!r.ok) fail(`not bound: ${r.reason}`);
      process.stdout.write(`bound ${r.device.id} (Device-Id ${r.device.deviceId}, Client-Id ${r.device.clientId})\n`);
    } else if (command === 'list') {
      const { bound, pending } = devices.list();
      for (const d of bound) process.stdout.write(`bound    ${d.id}  ${d.deviceId}  ${d.clientId}  since ${d.boundAt}\n`);
      for (const p of pending) process.stdout.write(`pending  code ${p.code}  ${p.deviceId}  ${p.clientId}  until ${new Date(p.expiresAt).toISOString()}\n`);
      if (bound.length + pending.length === 0) process.stdout.write('no devices\n');
    } else if (command === 'revoke' && arg) {
      const gone = devices.revoke(arg);
      if (gone.length === 0) fail(`no bound device matches ${arg}`);
      for (const d of gone) process.stdout.write(`revoked ${d.id} (${d.deviceId})\n`);
    } else {
      fail(USAGE);
    }
  } finally {
    devices.close();
  }
}

try {
  main(process.argv.slice(2));
} catch (err) {
  fail(err instanceof ConfigError ? err.message : `devices: ${(err as Error).message}`);
}
