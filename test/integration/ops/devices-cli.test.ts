/**
 * The owner's `devices` command in every form README.md and docs/ show, typed as a user types it:
 * through `npm run devices -- ...` in the repository, with the registry named by the configuration
 * (`--config FILE` or `XIAOZHI_CONFIG`), kept in a temporary directory.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { openStore } from '../../../store/store.ts';
import { silentLogger } from '../../../core/logger.ts';

const exec = promisify(execFile);
const DEVICE = { deviceId: 'e4:00:00:00:00:0a', clientId: '7d1c2b3a-0000-4000-8000-00000000000a' };

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Env without anything that would name another configuration. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env, ...extra };
  if (!('XIAOZHI_CONFIG' in extra)) delete env.XIAOZHI_CONFIG;
  return env;
}

async function npmDevices(args: readonly string[], env: NodeJS.ProcessEnv): Promise<Run> {
  try {
    const r = await exec('npm', ['run', '--silent', 'devices', '--', ...args], { cwd: process.cwd(), env, timeout: 60_000 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** The lines the documentation shows for the command (README and docs/), to keep this test honest. */
function documentedForms(): string[] {
  const files = ['README.md', 'docs/configuration.md', 'docs/deployment.md'];
  return files.flatMap((f) => [...readFileSync(f, 'utf8').matchAll(/npm run devices -- (\w+)/g)].map((m) => m[1] as string));
}

describe('npm run devices, as documented', () => {
  let dir: string;
  let config: string;
  let databaseFile: string;
  let code: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'devices-cli-'));
    databaseFile = join(dir, 'state', 'xiaozhi.db'); // the default store.url, in `server.dataDir`
    config = join(dir, 'config.yaml');
    writeFileSync(config, stringify({ server: { dataDir: join(dir, 'state'), auth: { mode: 'activation' } } }));
    // A device asked OTA: its code is pending in the store the configuration names.
    const store = await openStore({ url: 'sqlite:xiaozhi.db', dataDir: join(dir, 'state'), secret: '', codeTtlMs: 600_000, pendingPerSource: 3, replica: 'test', log: silentLogger, watch: false });
    code = (await store.registry.pendingCode(DEVICE.deviceId, DEVICE.clientId, '127.0.0.1'))?.code ?? '';
    await store.close();
    assert.match(code, /^\d{6}$/);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('the docs show bind (and this test covers every word they show)', () => {
    const words = new Set(documentedForms());
    assert.ok(words.has('bind'), [...words].join(', '));
    for (const w of words) assert.ok(['bind', 'list', 'revoke'].includes(w), `documented form not covered here: ${w}`);
  });

  test('list, bind CODE, list --config FILE, XIAOZHI_CONFIG=FILE list, revoke ID', async () => {
    const withEnv = cleanEnv({ XIAOZHI_CONFIG: config });

    const pending = await npmDevices(['list'], withEnv);
    assert.equal(pending.code, 0, pending.stderr);
    assert.match(pending.stdout, new RegExp(`pending  code ${code}  ${DEVICE.deviceId}`));

    const bound = await npmDevices(['bind', code], withEnv);
    assert.equal(bound.code, 0, bound.stderr);
    const id = /^bound ([0-9a-f]{10}) \(Device-Id e4:00:00:00:00:0a/m.exec(bound.stdout)?.[1];
    assert.ok(id, bound.stdout);

    const byFlag = await npmDevices(['list', '--config', config], cleanEnv());
    assert.equal(byFlag.code, 0, byFlag.stderr);
    assert.match(byFlag.stdout, new RegExp(`^bound    ${id}  ${DEVICE.deviceId}  ${DEVICE.clientId}`, 'm'));

    const byEnv = await npmDevices(['list'], withEnv);
    assert.equal(byEnv.code, 0, byEnv.stderr);
    assert.match(byEnv.stdout, new RegExp(`^bound    ${id} `, 'm'));

    const revoked = await npmDevices(['revoke', id], withEnv);
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.match(revoked.stdout, new RegExp(`^revoked ${id} \\(${DEVICE.deviceId}\\)`, 'm'));
    assert.match((await npmDevices(['list', '--config', config], cleanEnv())).stdout, /^no devices$/m);
  });

  test('--file PATH names the SQLite database directly; a bad command prints the usage and exits 1', async () => {
    const byFile = await npmDevices(['list', '--file', databaseFile], cleanEnv());
    assert.equal(byFile.code, 0, byFile.stderr);
    assert.match(byFile.stdout, /^no devices$/m);
    const bad = await npmDevices(['frobnicate', '--config', config], cleanEnv());
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /^usage: npm run devices -- bind CODE \| list \| revoke ID/m);
  });
});
