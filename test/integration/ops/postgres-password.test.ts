/**
 * The replicas stack's database settings with a password a URL cannot hold as typed (`@`, `/`, `:`,
 * `?`, `#`, `%`, a space): compose cannot URL-encode, so the compose file must not build the URL
 * from it. The server, started with the environment docker/compose.replicas.yml gives it (only the
 * compose host name replaced by the test cluster's address) and docker/replicas/server.yaml,
 * reaches a real PostgreSQL whose role needs that password, and its log never shows it; so does
 * the `devices` CLI (which the operator runs in the same container).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { startPostgres, type TestPostgres } from '../../helpers/postgres.ts';
import { freePort, spawnServer, type SpawnedServer } from './helpers/spawned-server.ts';

const PASSWORD = 'p@ss/w:rd?#%41 x';

/** The environment compose gives a replica, with `.env`'s POSTGRES_PASSWORD substituted the way compose does. */
function composeEnvironment(pgPort: number): Record<string, string> {
  const rep = parse(readFileSync('docker/compose.replicas.yml', 'utf8'), { merge: true }) as {
    services: Record<string, { environment?: Record<string, string> }>;
  };
  const env = rep.services['server-a']?.environment ?? {};
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) {
    // Compose substitutes ${VAR}, ${VAR:?message} and ${VAR:-default} once; the value is not parsed again.
    out[k] = String(v)
      .replace(/\$\{POSTGRES_PASSWORD(:[?-][^}]*)?\}/g, () => PASSWORD)
      .replace('@postgres:5432/', `@127.0.0.1:${pgPort}/`);
  }
  assert.ok(
    Object.values(out).some((v) => v.includes(`127.0.0.1:${pgPort}`)),
    `the compose file names the postgres service: ${JSON.stringify(env)}`,
  );
  return out;
}

function cleanEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of [
    'HOST',
    'PORT',
    'LOG_LEVEL',
    'PUBLIC_WS_URL',
    'XIAOZHI_CONFIG',
    'DATABASE_URL',
    'DATABASE_PASSWORD',
    'PGPASSWORD',
    'OPENAI_BASE_URL',
    'OPENAI_API_KEY',
    'LLM_MODEL',
    'ADMIN_TOKEN',
  ])
    delete env[k];
  return env;
}

describe('a POSTGRES_PASSWORD with @, / and : in the replicas stack', () => {
  let cluster: TestPostgres;
  let srv: SpawnedServer | undefined;
  const dir = mkdtempSync(join(tmpdir(), 'pg-password-'));
  before(async () => {
    cluster = await startPostgres();
    await cluster.passwordRole('xiaozhi', PASSWORD);
  });
  after(async () => {
    await srv?.kill();
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('the server and the devices CLI reach the database with it; it is never logged', async () => {
    const port = await freePort();
    const env = {
      ...cleanEnv(),
      ...composeEnvironment(cluster.port),
      HOST: '127.0.0.1',
      PORT: String(port),
      XIAOZHI_DATA_DIR: join(dir, 'data'),
    };
    srv = await spawnServer({
      command: process.execPath,
      args: ['--import', 'tsx', 'server/main.ts', '--config', 'docker/replicas/server.yaml'],
      env,
      port,
      readyTimeoutMs: 60_000,
    });
    // Activation mode: a new device gets a code, which the server keeps in the database.
    const res = await fetch(`${srv.httpUrl}/xiaozhi/ota/`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'Device-Id': 'e4:00:00:00:00:81', 'Client-Id': 'password-test' },
      body: '{}',
    });
    assert.equal(res.status, 200);
    assert.match(((await res.json()) as { activation?: { code: string } }).activation?.code ?? '', /^\d{6}$/);

    const cli = spawnSync(
      process.execPath,
      ['--import', 'tsx', 'scripts/devices.ts', 'list', '--config', 'docker/replicas/server.yaml'],
      { env, encoding: 'utf8', timeout: 60_000 },
    );
    assert.equal(cli.status, 0, `${cli.stdout}${cli.stderr}`);
    assert.match(cli.stdout, /e4:00:00:00:00:81/, 'the CLI lists the pending device from the same database');

    for (const out of [srv.output(), cli.stdout, cli.stderr]) {
      assert.ok(
        !out.includes(PASSWORD) && !out.includes(encodeURIComponent(PASSWORD)),
        'the password is not in the output',
      );
    }
  });
});
