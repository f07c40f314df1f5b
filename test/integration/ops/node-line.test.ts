/**
 * The project runs on the supported Node line, which package.json's `engines` names, whatever `node` the user's own
 * shell finds (on the CI machine an older one): `npm start` typed in a shell serves /metrics whose
 * `nodejs_version_info` is that line, and the `node` every npm script finds first on its PATH (the
 * one `node …` scripts and the `#!/usr/bin/env node` of bins such as tsx run) is that line.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { accessSync, constants, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { freePort, spawnServer, type SpawnedServer } from './helpers/spawned-server.ts';

const exec = promisify(execFile);

/** The supported line: an LTS line in support (Node 20's ended in April 2026), the one the image ships. */
const LINE = 24;

/** The major of `engines.node` ("24.x" → 24). */
function enginesMajor(): number {
  const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { engines?: { node?: string } };
  const m = /^\D*(\d+)/.exec(pkg.engines?.node ?? '');
  assert.ok(m, `package.json engines.node names a line: ${pkg.engines?.node}`);
  return Number(m[1]);
}

/**
 * The environment of a user's shell: this process's, less the node_modules/.bin folders npm put on
 * PATH when it started the tests (a shell has none of them).
 */
function shellEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const path = (process.env.PATH ?? '')
    .split(delimiter)
    .filter((p) => !p.endsWith(join('node_modules', '.bin')))
    .join(delimiter);
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: path, ...extra };
  for (const k of ['HOST', 'PORT', 'DATABASE_URL', 'XIAOZHI_DATA_DIR']) delete env[k];
  return env;
}

/** The first executable `node` on `path`, as `#!/usr/bin/env node` finds it. */
function firstNode(path: string): string | undefined {
  for (const dir of path.split(delimiter)) {
    try {
      accessSync(join(dir, 'node'), constants.X_OK);
      return join(dir, 'node');
    } catch {
      // Not in this folder.
    }
  }
  return undefined;
}

describe('the Node line', () => {
  test(`engines names Node ${LINE}`, () => {
    assert.equal(enginesMajor(), LINE);
  });

  const dir = mkdtempSync(join(tmpdir(), 'node-line-'));
  let server: SpawnedServer | undefined;
  after(async () => {
    await server?.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  test('`npm start` from a shell runs the server on the engines line (its /metrics say so)', async () => {
    const port = await freePort();
    const config = join(dir, 'config.yaml');
    writeFileSync(
      config,
      stringify({ server: { host: '127.0.0.1', port, dataDir: join(dir, 'data') }, logging: { level: 'warn' } }),
    );
    server = await spawnServer({
      command: 'npm',
      args: ['start'],
      env: shellEnv({ XIAOZHI_CONFIG: config }),
      port,
      readyTimeoutMs: 90_000,
    });
    const metrics = await (await fetch(`${server.httpUrl}/metrics`)).text();
    const info = metrics.split('\n').find((l) => l.startsWith('nodejs_version_info{'));
    assert.ok(info, 'the default metrics name the Node version');
    assert.match(info, new RegExp(`major="${LINE}"`), info);
  });

  test('every npm script finds a `node` of the engines line first on its PATH (the one tsx and `node …` scripts run)', async () => {
    // `npm run env` prints the environment npm gives the project's scripts.
    const { stdout } = await exec('npm', ['run', '--silent', 'env'], { env: shellEnv({}), timeout: 60_000 });
    const path = /^PATH=(.*)$/m.exec(stdout)?.[1] ?? '';
    const node = firstNode(path);
    assert.ok(node, `a node on the scripts' PATH: ${path}`);
    const version = execFileSync(node, ['-p', 'process.versions.node'], { encoding: 'utf8' }).trim();
    assert.equal(Number(version.split('.')[0]), LINE, `${node} is ${version}`);
  });
});
