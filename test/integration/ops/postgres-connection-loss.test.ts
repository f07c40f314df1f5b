/**
 * A live server process (`server/main.ts`) on PostgreSQL whose database connections are killed
 * (`pg_terminate_backend`, as an operator, a failover or a pooler would): one of them in the
 * middle of a write transaction, the others idle in the pool and the change feed's LISTEN. An
 * unhandled `error` event of a pg client would end the process; instead it logs the loss, keeps
 * serving, and its change feed reconnects (a revoke made by another process afterwards still ends
 * the device's session).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { stringify } from 'yaml';
import { DeviceSim } from '../../fixtures/device-sim.ts';
import { startPostgres, type TestPostgres } from '../../helpers/postgres.ts';
import { open } from '../../helpers/store-targets.ts';
import { waitFor } from '../../helpers/wait.ts';
import { freePort, spawnServer, type SpawnedServer } from './helpers/spawned-server.ts';
import type { Store } from '../../../store/store.ts';

const DEVICE = { 'Device-Id': 'e4:00:00:00:00:51', 'Client-Id': '0b9a3c1e-7d55-4e0f-9a51-2c4f1e9b7d51' };
/** Error level in pino's numbers. */
const ERROR = 50;

function cleanEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of ['HOST', 'PORT', 'LOG_LEVEL', 'PUBLIC_WS_URL', 'XIAOZHI_CONFIG', 'DATABASE_URL']) delete env[k];
  return env;
}

interface OtaAnswer {
  websocket: { url: string; token?: string };
  activation?: { code: string };
}

async function ota(srv: SpawnedServer, device: Record<string, string>): Promise<{ status: number; body?: OtaAnswer }> {
  const res = await fetch(`${srv.httpUrl}/xiaozhi/ota/`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...device },
    body: '{}',
  });
  return res.status === 200 ? { status: 200, body: (await res.json()) as OtaAnswer } : { status: res.status };
}

describe('PostgreSQL connections killed under a live server', () => {
  let cluster: TestPostgres;
  let url: string;
  let srv: SpawnedServer;
  let other: Store;
  const dir = mkdtempSync(join(tmpdir(), 'pg-loss-'));
  before(async () => {
    cluster = await startPostgres();
    url = await cluster.database();
    const port = await freePort();
    const file = join(dir, 'config.yaml');
    writeFileSync(
      file,
      stringify({
        server: { host: '127.0.0.1', port, dataDir: join(dir, 'data'), auth: { mode: 'activation' } },
        store: { url },
        logging: { level: 'info' },
      }),
    );
    srv = await spawnServer({
      command: process.execPath,
      args: ['--import', 'tsx', 'server/main.ts', '--config', file],
      env: cleanEnv(),
      port,
      readyTimeoutMs: 60_000,
    });
    // Another process on the same database, as the devices CLI or a second replica would be.
    other = await open({ url, dataDir: dir }, { watch: false });
  });
  after(async () => {
    await srv?.kill();
    await other?.close();
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('one killed mid-transaction, the rest idle: the server lives, logs it, serves, and its feed reconnects', async () => {
    // A bound device with a live session.
    const code = (await ota(srv, DEVICE)).body?.activation?.code ?? '';
    assert.match(code, /^\d{6}$/);
    assert.equal((await other.registry.bind(code)).ok, true);
    const token = await waitFor(async () => (await ota(srv, DEVICE)).body?.websocket.token, {
      what: 'the binding to reach the server',
      timeoutMs: 10_000,
    });
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId: DEVICE['Device-Id'], clientId: DEVICE['Client-Id'], token });
    const admin = new pg.Client({ connectionString: url });
    admin.on('error', () => undefined);
    try {
      await dev.hello();
      await admin.connect();
      // Hold the pending-code table against writes (reads pass): a new device's OTA makes the
      // server's write transaction wait on it after its first statements, so one pool client is
      // checked out (no pool listener on it) inside a transaction when its backend dies.
      await admin.query('BEGIN');
      await admin.query('LOCK TABLE pending_codes IN EXCLUSIVE MODE');
      const blocked = ota(srv, { 'Device-Id': 'e4:00:00:00:00:52', 'Client-Id': 'waits-on-the-lock' });
      // The admin client is inside the transaction that holds the lock, and PostgreSQL keeps one
      // snapshot of pg_stat_activity per transaction: every look clears it first, or a first look
      // made before the server's statement reached the lock (a slow machine) is all it ever sees.
      const activity = async (query: string): Promise<pg.QueryResult> => {
        await admin.query('select pg_stat_clear_snapshot()');
        return admin.query(query);
      };
      let answered: string | undefined;
      void blocked.then(
        (r) => (answered = `answered ${r.status} without waiting: ${(JSON.stringify(r.body) ?? '').slice(0, 300)}`),
        (err: Error) => (answered = `failed without waiting: ${err.message}`),
      );
      await waitFor(
        async () => {
          if (answered) throw new Error(`${answered}\nserver output:\n${srv.output().slice(-3000)}`);
          return (
            await activity(
              "select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and pid <> pg_backend_pid()",
            )
          ).rowCount;
        },
        { what: 'a server transaction waiting on the lock', timeoutMs: 20_000 },
      ).catch(async (err: Error) => {
        const backends = await activity(
          'select state, wait_event_type, wait_event, left(query, 120) as query from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()',
        );
        throw new Error(
          `${err.message}\nbackends: ${JSON.stringify(backends.rows)}\nserver output:\n${srv.output().slice(-3000)}`,
        );
      });
      const killed = await activity(
        'select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()',
      );
      assert.ok(
        (killed.rowCount ?? 0) >= 2,
        `the server's connections (pool and feed) were terminated: ${killed.rowCount}`,
      );
      await admin.query('ROLLBACK');
      const interrupted = await blocked.catch((err: Error) => {
        throw new Error(
          `the interrupted request got no answer (${err.message}); server output:\n${srv.output().slice(-3000)}`,
        );
      });
      assert.equal(interrupted.status, 503, 'the interrupted request is answered, not dropped');

      await waitFor(() => srv.logLines('store: change feed reconnected').length > 0, {
        what: 'the change feed to reconnect',
        timeoutMs: 20_000,
      });
      assert.equal(srv.proc.exitCode, null, `the server is still running:\n${srv.output().slice(-3000)}`);
      assert.equal(srv.proc.signalCode, null);
      assert.ok(
        srv.logLines('store: database connection lost').some((l) => l.level === ERROR),
        `the lost pool connection is logged at error:\n${srv.output().slice(-3000)}`,
      );
      assert.doesNotMatch(srv.output(), /uncaught|Connection terminated unexpectedly\n\s+at /i);

      // Requests still work: a new device gets a code (the pool reconnects) ...
      assert.match(
        (await ota(srv, { 'Device-Id': 'e4:00:00:00:00:53', 'Client-Id': 'after-the-loss' })).body?.activation?.code ??
          '',
        /^\d{6}$/,
      );
      // ... and a revoke by another process reaches the live session through the reconnected feed.
      assert.equal((await other.registry.revoke(DEVICE['Device-Id'])).length, 1);
      const closed = await Promise.race([
        dev.closed,
        new Promise<string>((r) => setTimeout(() => r('still open'), 10_000)),
      ]);
      assert.equal(closed, 4005, 'the revoke ended the session');
      assert.equal(srv.proc.exitCode, null);
    } finally {
      dev.close();
      await admin.end().catch(() => undefined);
    }
  });
});
