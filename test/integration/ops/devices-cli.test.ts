/**
 * The owner's `devices` command in every form README.md and docs/ show, typed as a user types it:
 * through `npm run devices -- ...` in the repository, with the registry named by the configuration
 * (`--config FILE` or `XIAOZHI_CONFIG`), kept in a temporary directory.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { openStore } from '../../../store/store.ts';
import { silentLogger } from '../../../core/logger.ts';
import { recordingConversation } from '../../helpers/recording-conversation.ts';
import { startTestApp, type TestApp } from '../../helpers/test-app.ts';
import { DeviceSim } from '../../fixtures/device-sim.ts';

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
    const r = await exec('npm', ['run', '--silent', 'devices', '--', ...args], {
      cwd: process.cwd(),
      env,
      timeout: 60_000,
    });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** The lines the documentation shows for the command (README and docs/), to keep this test honest. */
function documentedForms(): string[] {
  const files = ['README.md', 'docs/configuration.md', 'docs/deployment.md', 'docs/security.md'];
  return files.flatMap((f) =>
    [...readFileSync(f, 'utf8').matchAll(/npm run devices -- (\w+)/g)].map((m) => m[1] as string),
  );
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
    const store = await openStore({
      url: 'sqlite:xiaozhi.db',
      dataDir: join(dir, 'state'),
      secret: '',
      codeTtlMs: 600_000,
      pendingPerSource: 3,
      replica: 'test',
      log: silentLogger,
      watch: false,
    });
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

/**
 * Runs `npm run devices -- ARGS` and calls `onLine` with each stdout line as it is printed, so the
 * test can act the moment the command reports its change (before npm has even exited).
 */
function npmDevicesLive(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  onLine: (line: string) => Promise<void> | void,
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn('npm', ['run', '--silent', 'devices', '--', ...args], {
      cwd: process.cwd(),
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let pending = '';
    const acted: Array<Promise<void> | void> = [];
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      pending += d.toString();
      let nl: number;
      while ((nl = pending.indexOf('\n')) >= 0) {
        acted.push(onLine(pending.slice(0, nl)));
        pending = pending.slice(nl + 1);
      }
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      Promise.all(acted).then(() => resolve({ code: code ?? -1, stdout, stderr }), reject);
    });
  });
}

describe('npm run devices against a running server', () => {
  let dir: string;
  let config: string;
  let t: TestApp;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'devices-live-'));
    config = join(dir, 'config.yaml');
    writeFileSync(config, stringify({ server: { dataDir: join(dir, 'state'), auth: { mode: 'activation' } } }));
    t = await startTestApp({
      createConversation: recordingConversation().factory,
      config: { server: { dataDir: join(dir, 'state'), auth: { mode: 'activation' } } },
    });
  });
  after(async () => {
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const ota = async (): Promise<{ activation?: { code: string }; websocket: { token?: string } }> => {
    const res = await fetch(`${t.httpUrl}/xiaozhi/ota/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'device-id': DEVICE.deviceId, 'client-id': DEVICE.clientId },
      body: '{}',
    });
    assert.equal(res.status, 200);
    return (await res.json()) as { activation?: { code: string }; websocket: { token?: string } };
  };
  const activate = async (): Promise<number> => {
    const res = await fetch(`${t.httpUrl}/xiaozhi/ota/activate`, {
      method: 'POST',
      headers: { 'device-id': DEVICE.deviceId, 'client-id': DEVICE.clientId },
    });
    await res.arrayBuffer();
    return res.status;
  };

  test('the OTA right after a bind gets the bound answer, and right after a revoke no longer the old token', async () => {
    const env = cleanEnv({ XIAOZHI_CONFIG: config });
    const first = await ota();
    const code = first.activation?.code ?? '';
    assert.match(code, /^\d{6}$/);

    // The device asks again the moment the command says it bound the code.
    // Then it connects with the token OTA gave it, before this server's cache has heard of the bind.
    let afterBind: { ota: Awaited<ReturnType<typeof ota>>; activate: number; connected: string } | undefined;
    const bound = await npmDevicesLive(['bind', code], env, async (line) => {
      if (!line.startsWith('bound ')) return;
      const answer = await ota();
      const status = await activate();
      const dev = new DeviceSim({ url: t.wsUrl, ...DEVICE, token: answer.websocket.token ?? '' });
      const connected = await dev.opened.then(
        () => 'open',
        (err: unknown) => String(err),
      );
      dev.close();
      afterBind = { ota: answer, activate: status, connected };
    });
    assert.equal(bound.code, 0, bound.stderr);
    assert.ok(afterBind, bound.stdout);
    assert.equal(afterBind.ota.activation, undefined, `a bound device gets no code: ${JSON.stringify(afterBind.ota)}`);
    assert.equal(afterBind.ota.websocket.token, first.websocket.token, 'the token handed out with the code, now valid');
    assert.equal(afterBind.activate, 200, 'the activation poll says bound');
    assert.equal(afterBind.connected, 'open', 'the WebSocket takes the token OTA just gave');

    let afterRevoke: { ota: Awaited<ReturnType<typeof ota>>; activate: number } | undefined;
    const revoked = await npmDevicesLive(['revoke', DEVICE.deviceId], env, async (line) => {
      if (line.startsWith('revoked ')) afterRevoke = { ota: await ota(), activate: await activate() };
    });
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.ok(afterRevoke, revoked.stdout);
    assert.match(afterRevoke.ota.activation?.code ?? '', /^\d{6}$/, 'a revoked device is asked for a new code');
    assert.notEqual(afterRevoke.ota.websocket.token, first.websocket.token, 'never the revoked token again');
    assert.equal(afterRevoke.activate, 202);
  });
});

describe('npm run devices on a store that does not exist', () => {
  test('exits non-zero naming the store it looked for, and creates nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'devices-missing-'));
    try {
      const file = join(dir, 'typo', 'xiaozhi.db');
      for (const args of [
        ['bind', '123456', '--file', file],
        ['list', '--file', file],
      ]) {
        const r = await npmDevices(args, cleanEnv());
        assert.notEqual(r.code, 0, `${args.join(' ')}: ${r.stdout}`);
        assert.ok(r.stderr.includes(file), `${args.join(' ')}: the message names ${file}: ${r.stderr}`);
        assert.doesNotMatch(r.stderr, /unknown or expired code/);
      }
      // The configuration names a data directory nobody has started a server on.
      const config = join(dir, 'config.yaml');
      const dataDir = join(dir, 'never-started');
      writeFileSync(config, stringify({ server: { dataDir, auth: { mode: 'activation' } } }));
      const r = await npmDevices(['bind', '123456', '--config', config], cleanEnv());
      assert.notEqual(r.code, 0, r.stdout);
      assert.ok(r.stderr.includes(join(dataDir, 'xiaozhi.db')), r.stderr);
      assert.equal(existsSync(dataDir), false, 'no data directory made');
      assert.deepEqual(readdirSync(dir).sort(), ['config.yaml'], 'nothing created');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('on a store that exists, it says which one it opened', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'devices-which-'));
    try {
      const store = await openStore({
        url: 'sqlite:xiaozhi.db',
        dataDir: dir,
        secret: '',
        codeTtlMs: 600_000,
        pendingPerSource: 3,
        replica: 'test',
        log: silentLogger,
        watch: false,
      });
      await store.close();
      const r = await npmDevices(['bind', '123456', '--file', join(dir, 'xiaozhi.db')], cleanEnv());
      assert.equal(r.code, 1);
      assert.match(
        r.stderr,
        new RegExp(`store sqlite:${join(dir, 'xiaozhi.db').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`),
      );
      assert.match(r.stderr, /not bound: unknown or expired code/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
