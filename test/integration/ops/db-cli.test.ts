/**
 * The operator's database commands, typed as a user types them: `npm run db -- migrate` on the
 * default SQLite store and on a real PostgreSQL (DATABASE_URL), and what an unreachable database
 * does to it and to the server's start: a clear error naming store.url, the password hidden.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { latestVersion } from '../../../store/migrations.ts';
import { startPostgres, type TestPostgres } from '../../helpers/postgres.ts';

const exec = promisify(execFile);

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function runCmd(file: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<Run> {
  try {
    const r = await exec(file, args, { cwd: process.cwd(), env, timeout: 60_000 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** Env without anything that would name another configuration or database. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of ['XIAOZHI_CONFIG', 'DATABASE_URL', 'XIAOZHI_DATA_DIR', 'HOST', 'PORT']) delete env[k];
  return { ...env, ...extra };
}

describe('npm run db -- migrate', () => {
  const dir = mkdtempSync(join(tmpdir(), 'db-cli-'));
  let pg: TestPostgres | undefined;
  after(async () => {
    await pg?.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const config = join(dir, 'config.yaml');
  writeFileSync(config, stringify({ server: { dataDir: join(dir, 'state') } }));
  const version = latestVersion('sqlite');

  test('on the default SQLite store: creates the database in server.dataDir and prints the schema version; again, nothing to do', async () => {
    for (let i = 0; i < 2; i++) {
      const r = await runCmd('npm', ['run', '--silent', 'db', '--', 'migrate'], cleanEnv({ XIAOZHI_CONFIG: config }));
      assert.equal(r.code, 0, r.stderr);
      assert.equal(
        r.stdout,
        `database sqlite:${join(dir, 'state', 'xiaozhi.db')} (sqlite) at schema version ${version}\n`,
      );
    }
    assert.ok(existsSync(join(dir, 'state', 'xiaozhi.db')));
  });

  test('on PostgreSQL named by DATABASE_URL', async () => {
    pg = await startPostgres();
    const url = await pg.database();
    const r = await runCmd(
      'npm',
      ['run', '--silent', 'db', '--', 'migrate'],
      cleanEnv({ XIAOZHI_CONFIG: config, DATABASE_URL: url }),
    );
    assert.equal(r.code, 0, r.stderr);
    // The user name goes too: in a URL without a password it may be the credential itself.
    assert.equal(
      r.stdout,
      `database ${url.replace(/\/\/[^@/]*@/, '//[Redacted]@')} (postgres) at schema version ${version}\n`,
    );
  });

  test('an unreachable database: the command and the server fail with an error naming store.url, without the password', async () => {
    const url = 'postgres://app:hunter2@127.0.0.1:1/xiaozhi';
    const db = await runCmd(
      'npm',
      ['run', '--silent', 'db', '--', 'migrate'],
      cleanEnv({ XIAOZHI_CONFIG: config, DATABASE_URL: url }),
    );
    assert.equal(db.code, 1);
    assert.match(
      db.stderr,
      /^store\.url postgres:\/\/\[Redacted\]@127\.0\.0\.1:1\/xiaozhi: cannot reach the database/m,
    );
    const server = await runCmd(
      process.execPath,
      ['--import', 'tsx', 'server/main.ts', '--config', config],
      cleanEnv({ DATABASE_URL: url, PORT: '0' }),
    );
    assert.equal(server.code, 1, server.stderr);
    assert.match(
      server.stderr,
      /xiaozhi-server failed to start: store\.url postgres:\/\/\[Redacted\]@127\.0\.0\.1:1\/xiaozhi: cannot reach the database/,
    );
    assert.equal(`${db.stderr}${server.stderr}${server.stdout}`.includes('hunter2'), false);
    const bad = await runCmd(
      'npm',
      ['run', '--silent', 'db', '--', 'frobnicate'],
      cleanEnv({ XIAOZHI_CONFIG: config }),
    );
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /^usage: npm run db -- migrate/m);
  });
});
