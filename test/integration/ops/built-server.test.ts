/**
 * The compiled server runs as docs/configuration.md shows: `npm run build`, then
 * `node dist/server/main.js`. Built into a directory of its own (so a developer's dist/ is left
 * alone), started with the embedded defaults from an empty working directory, it serves the
 * browser device page at `/` and its scripts, then stops cleanly on SIGTERM.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, spawnServer, type SpawnedServer } from './helpers/spawned-server.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** Runs a command to its end; rejects with its output when it fails. */
function run(command: string, args: readonly string[], cwd: string): Promise<void> {
  return new Promise((done, fail) => {
    const child = spawn(command, [...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString('utf8')));
    child.stderr.on('data', (b: Buffer) => (out += b.toString('utf8')));
    child.once('error', fail);
    child.once('exit', (code) =>
      code === 0 ? done() : fail(new Error(`${command} ${args.join(' ')} exited ${code}:\n${out.slice(-3000)}`)),
    );
  });
}

describe('the built server (npm run build, node dist/server/main.js)', () => {
  // Inside the package (test/output is ignored by git and the type check): the compiled code
  // finds the pages beside package.json, as it does in dist/.
  const outDir = join(ROOT, 'test', 'output', `built-${process.pid}`);
  const cwd = mkdtempSync(join(tmpdir(), 'ops-built-'));
  let srv: SpawnedServer | undefined;
  after(async () => {
    await srv?.kill();
    rmSync(outDir, { recursive: true, force: true });
    rmSync(cwd, { recursive: true, force: true });
  });

  test('serves the device page at / and stops on SIGTERM', async () => {
    await run('npm', ['run', 'build', '--', '--outDir', outDir], ROOT);
    const port = await freePort();
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: String(port),
      XIAOZHI_DATA_DIR: join(cwd, 'data'),
    };
    for (const k of ['XIAOZHI_CONFIG', 'PUBLIC_WS_URL', 'OPENAI_BASE_URL', 'OPENAI_API_KEY', 'LLM_MODEL', 'LOG_LEVEL'])
      delete env[k];
    srv = await spawnServer({
      command: process.execPath,
      args: [join(outDir, 'server', 'main.js')],
      cwd,
      env,
      port,
      readyTimeoutMs: 90_000,
    });

    const page = await fetch(`${srv.httpUrl}/`);
    assert.equal(page.status, 200, 'GET / answers 200');
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    assert.equal(
      await page.text(),
      readFileSync(join(ROOT, 'web', 'device', 'index.html'), 'utf8'),
      'the page is web/device/index.html',
    );
    const script = await fetch(`${srv.httpUrl}/js/main.js`);
    assert.equal(script.status, 200, "the page's script is served too");
    assert.match(script.headers.get('content-type') ?? '', /javascript/);

    srv.proc.kill('SIGTERM');
    assert.deepEqual(await srv.exited, { code: 0, signal: null }, 'a clean stop');
  });
});
