/**
 * What an operator sees in the server's log (`docker logs`), from a real server process: the auth
 * mode and where its state is kept at start, each new activation code with the device that asked,
 * and the binds and revokes the `devices` CLI makes while the server runs.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { freePort, spawnServer, type SpawnedServer } from './helpers/spawned-server.ts';
import { waitFor } from '../../helpers/wait.ts';

const run = promisify(execFile);
const DEVICE = { 'Device-Id': 'e4:00:00:00:00:21', 'Client-Id': '0b9a3c1e-7d55-4e0f-9a51-2c4f1e9b7d21' };

/** Env without the variables that would override the test's config file. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of [
    'HOST',
    'PORT',
    'OPENAI_BASE_URL',
    'OPENAI_API_KEY',
    'LLM_MODEL',
    'LOG_LEVEL',
    'PUBLIC_WS_URL',
    'XIAOZHI_CONFIG',
  ])
    delete env[k];
  return env;
}

describe('the operator log of a server in activation mode', () => {
  const dir = mkdtempSync(join(tmpdir(), 'operator-log-'));
  let srv: SpawnedServer | undefined;
  after(async () => {
    await srv?.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  test('start line with mode and database; the code with Device-Id, Client-Id and board; binds and revokes by the CLI', async () => {
    const port = await freePort();
    const database = `sqlite:${join(dir, 'state', 'xiaozhi.db')}`;
    const config = join(dir, 'config.yaml');
    writeFileSync(
      config,
      stringify({
        server: { host: '127.0.0.1', port, dataDir: join(dir, 'state'), auth: { mode: 'activation' } },
        logging: { level: 'info' },
      }),
    );
    srv = await spawnServer({
      command: process.execPath,
      args: ['--import', 'tsx', 'server/main.ts', '--config', config],
      env: cleanEnv(),
      port,
    });
    const s = srv;

    const auth = s.logLines('device authentication');
    assert.equal(auth.length, 1, s.output().slice(-3000));
    assert.equal(auth[0]?.level, 30);
    assert.equal(auth[0]?.mode, 'activation');
    assert.equal(auth[0]?.database, database);

    const body = JSON.stringify({
      mac_address: DEVICE['Device-Id'],
      uuid: DEVICE['Client-Id'],
      board: { type: 'bread-compact-wifi' },
      application: { version: '2.0.0' },
    });
    const ota = async (): Promise<{ activation?: { code: string } }> => {
      const res = await fetch(`${s.httpUrl}/xiaozhi/ota/`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', ...DEVICE },
        body,
      });
      return (await res.json()) as { activation?: { code: string } };
    };
    const code = (await ota()).activation?.code ?? '';
    assert.match(code, /^\d{6}$/);
    await ota();
    await waitFor(() => s.logLines('activation code issued').length > 0, {
      what: 'the code is logged',
      timeoutMs: 5_000,
    });
    const issued = s.logLines('activation code issued');
    assert.equal(issued.length, 1, 'logged once, not at every OTA request that repeats it');
    assert.equal(issued[0]?.level, 30);
    assert.deepEqual(
      { deviceId: issued[0]?.deviceId, clientId: issued[0]?.clientId, board: issued[0]?.board, code: issued[0]?.code },
      { deviceId: DEVICE['Device-Id'], clientId: DEVICE['Client-Id'], board: 'bread-compact-wifi', code },
    );

    const cli = ['--import', 'tsx', 'scripts/devices.ts'];
    const bound = await run(process.execPath, [...cli, 'bind', code, '--config', config], { env: cleanEnv() });
    const id = /^bound ([0-9a-f]{10}) /.exec(bound.stdout)?.[1] ?? '';
    assert.ok(id, bound.stdout);
    // The server hears of changes the CLI makes through the store's change feed (polled every 500 ms).
    await waitFor(() => s.logLines('device bound').length > 0, {
      what: 'the server logs the bind it sees',
      timeoutMs: 10_000,
    });
    const b = s.logLines('device bound')[0];
    assert.deepEqual(
      { level: b?.level, id: b?.id, deviceId: b?.deviceId, clientId: b?.clientId },
      { level: 30, id, deviceId: DEVICE['Device-Id'], clientId: DEVICE['Client-Id'] },
    );

    await run(process.execPath, [...cli, 'revoke', id, '--config', config], { env: cleanEnv() });
    await waitFor(() => s.logLines('device revoked').length > 0, {
      what: 'the server logs the revoke it sees',
      timeoutMs: 10_000,
    });
    const r = s.logLines('device revoked')[0];
    assert.deepEqual(
      { level: r?.level, id: r?.id, deviceId: r?.deviceId },
      { level: 30, id, deviceId: DEVICE['Device-Id'] },
    );
    assert.equal(s.output().includes('Chinese'), false, 'no language warning in English');
  });
});

describe('the operator log of a server for Chinese speakers', () => {
  const dir = mkdtempSync(join(tmpdir(), 'operator-log-zh-'));
  let srv: SpawnedServer | undefined;
  after(async () => {
    await srv?.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  test('language zh with the embedded (English) ASR: a warning at start naming asr.provider and what to use', async () => {
    const port = await freePort();
    const config = join(dir, 'config.yaml');
    writeFileSync(
      config,
      stringify({
        language: 'zh',
        server: { host: '127.0.0.1', port, dataDir: join(dir, 'state') },
        logging: { level: 'info' },
      }),
    );
    srv = await spawnServer({
      command: process.execPath,
      args: ['--import', 'tsx', 'server/main.ts', '--config', config],
      env: cleanEnv(),
      port,
    });
    const lines = srv
      .output()
      .split('\n')
      .filter((l) => l.includes('asr.provider'));
    assert.equal(lines.length, 1, srv.output().slice(-3000));
    const line = JSON.parse(lines[0] ?? '{}') as { level: number; msg: string; key: string };
    assert.equal(line.level, 40, 'a warning');
    assert.equal(line.key, 'asr.provider');
    assert.match(line.msg, /pocketsphinx/);
    assert.match(line.msg, /Chinese/);
    assert.match(line.msg, /SenseVoice|Whisper/);
  });
});
