/**
 * A throwaway PostgreSQL for tests: `initdb` and `pg_ctl` (Debian's `postgresql` package, under
 * /usr/lib/postgresql/<version>/bin) make a cluster in a temp folder, listening on a free loopback
 * port with its socket in that folder; `stop()` ends it and removes the folder. PostgreSQL refuses
 * to run as root, so when the tests run as root the cluster belongs to the `postgres` user.
 * Missing binaries are an error telling what to install: these tests never skip.
 */
import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);

export interface TestPostgres {
  /** The cluster's `postgres` database: postgres://postgres@127.0.0.1:PORT/postgres */
  url: string;
  port: number;
  /** A new empty database on the cluster, for one test. */
  database(): Promise<string>;
  /**
   * A login role that must give its password (scram-sha-256; every other role keeps `trust`)
   * and a database of the same name that it owns, as the postgres image makes from POSTGRES_USER,
   * POSTGRES_PASSWORD and POSTGRES_DB.
   */
  passwordRole(name: string, password: string): Promise<void>;
  /** Stops the server as a crash would (`immediate`); `up()` starts it again on the same port. */
  down(): Promise<void>;
  up(): Promise<void>;
  /** down() then up(). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

function binDir(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root).filter(
        (v) => existsSync(join(root, v, 'bin', 'initdb')) && existsSync(join(root, v, 'bin', 'pg_ctl')),
      )
    : [];
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0];
  if (!newest)
    throw new Error(
      "PostgreSQL (initdb, pg_ctl) is not installed: run scripts/setup.sh --test (it installs Debian's postgresql package)",
    );
  return join(root, newest, 'bin');
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      srv.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export async function startPostgres(): Promise<TestPostgres> {
  const bin = binDir();
  const asRoot = userInfo().uid === 0;
  const dir = mkdtempSync(join(tmpdir(), 'pg-test-'));
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    chownSync(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  const pgRun = (cmd: string, args: string[]): Promise<{ stdout: string; stderr: string }> =>
    asRoot
      ? run('runuser', ['-u', 'postgres', '--', join(bin, cmd), ...args], { cwd: dir })
      : run(join(bin, cmd), args, { cwd: dir });
  const data = join(dir, 'data');
  const port = await freePort();
  await pgRun('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions']);
  const start = async (): Promise<void> => {
    await pgRun('pg_ctl', [
      '-D',
      data,
      '-l',
      join(dir, 'server.log'),
      '-w',
      '-t',
      '60',
      '-o',
      `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off`,
      'start',
    ]);
  };
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const down = async (): Promise<void> => {
    // The cluster commits asynchronously (for speed): without this, a crash right after a commit
    // could lose it, which a production server (synchronous commits) never would.
    const client = new pg.Client({ connectionString: url });
    // A pg client without an `error` listener ends the process when its backend goes away.
    client.on('error', () => undefined);
    await client
      .connect()
      .then(() => client.query('CHECKPOINT'))
      .catch(() => undefined)
      .finally(() => client.end().catch(() => undefined));
    await pgRun('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
  };
  await start();
  let n = 0;
  return {
    url,
    port,
    async database() {
      const name = `t${process.pid}_${++n}`;
      const client = new pg.Client({ connectionString: url });
      client.on('error', () => undefined);
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${name}`);
      } finally {
        await client.end();
      }
      return `postgres://postgres@127.0.0.1:${port}/${name}`;
    },
    async passwordRole(name, password) {
      if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`role name ${name}: lower-case letters, digits and _ only`);
      const client = new pg.Client({ connectionString: url });
      client.on('error', () => undefined);
      await client.connect();
      try {
        await client.query(`CREATE ROLE ${name} LOGIN PASSWORD ${client.escapeLiteral(password)}`);
        await client.query(`CREATE DATABASE ${name} OWNER ${name}`);
        // First match wins: this role over TCP needs its password.
        const hba = join(data, 'pg_hba.conf');
        writeFileSync(hba, `host all ${name} 127.0.0.1/32 scram-sha-256\n${readFileSync(hba, 'utf8')}`);
        await client.query('SELECT pg_reload_conf()');
      } finally {
        await client.end();
      }
      // The reload is signalled, not awaited: wait until the role without its password is refused.
      const deadline = performance.now() + 10_000;
      for (;;) {
        const probe = new pg.Client({ connectionString: `postgres://${name}@127.0.0.1:${port}/${name}`, password: '' });
        probe.on('error', () => undefined);
        const refused = await probe.connect().then(
          () => false,
          () => true,
        );
        await probe.end().catch(() => undefined);
        if (refused) return;
        if (performance.now() > deadline) throw new Error('pg_hba.conf reload did not take effect');
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    down,
    up: start,
    async restart() {
      await down();
      await start();
    },
    async stop() {
      try {
        await pgRun('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
