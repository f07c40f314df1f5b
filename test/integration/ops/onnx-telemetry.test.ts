/**
 * onnxruntime-node, which runs the Silero VAD, sends usage telemetry to Microsoft by default: it
 * keeps a device id and an event cache under the user's cache directory and uploads from there;
 * where it finds no CA bundle (the container image) it prints plain-text warnings about it on
 * every start. The server turns it off. A real server process (`node --import tsx server/main.ts`)
 * with its own empty HOME and cache directory, once it has loaded the model (in a media worker,
 * and in-process with `audio.workers: 0`) and stopped, has left no onnxruntime state there, and
 * every line it wrote to stdout is a JSON log line.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { freePort, nonJsonLines, spawnServer, type SpawnedServer } from './helpers/spawned-server.ts';

/**
 * The variables onnxruntime reads to decide on telemetry itself (its opt-out, its unit-test flag
 * and the CI markers it stays quiet under), removed so that only the server can turn it off.
 */
const ORT_QUIETING = [
  'ORT_DISABLE_TELEMETRY',
  'ORT_TELEMETRY_DISABLED',
  'ORT_RUNNING_UNIT_TESTS',
  'CI',
  'TF_BUILD',
  'GITHUB_ACTIONS',
  'GITLAB_CI',
  'CIRCLECI',
  'TRAVIS',
  'JENKINS_URL',
  'CODEBUILD_BUILD_ID',
  'BUILDKITE',
  'TEAMCITY_VERSION',
  'APPVEYOR',
  'BITBUCKET_BUILD_NUMBER',
  'SYSTEM_TEAMFOUNDATIONCOLLECTIONURI',
];
const CONFIG_ENV = [
  'HOST',
  'PORT',
  'OPENAI_BASE_URL',
  'OPENAI_API_KEY',
  'LLM_MODEL',
  'LOG_LEVEL',
  'PUBLIC_WS_URL',
  'XIAOZHI_CONFIG',
  'XIAOZHI_DATA_DIR',
];

/** Every file under `dir`, relative to it. */
function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(dir.length + 1));
}

describe('onnxruntime telemetry is off and stdout is JSON lines only', () => {
  const root = mkdtempSync(join(tmpdir(), 'ops-ort-'));
  const servers: SpawnedServer[] = [];
  after(async () => {
    for (const s of servers) await s.kill();
    rmSync(root, { recursive: true, force: true });
  });

  for (const workers of [1, 0]) {
    test(`with audio.workers: ${workers}`, async () => {
      const dir = join(root, `workers-${workers}`);
      const home = join(dir, 'home');
      mkdirSync(home, { recursive: true });
      const port = await freePort();
      const file = join(dir, 'config.yaml');
      writeFileSync(
        file,
        stringify({
          server: { host: '127.0.0.1', port, dataDir: join(dir, 'data') },
          audio: { workers },
          vad: { provider: 'silero' },
          logging: { level: 'info' },
        }),
      );
      const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, XDG_CACHE_HOME: join(home, '.cache') };
      for (const k of [...ORT_QUIETING, ...CONFIG_ENV]) delete env[k];
      const srv = await spawnServer({
        command: process.execPath,
        args: ['--import', 'tsx', 'server/main.ts', '--config', file],
        env,
        port,
        readyTimeoutMs: 90_000,
      });
      servers.push(srv);
      assert.ok(
        srv.logLines('silero vad model loaded').length >= 1,
        `the server loaded the Silero model:\n${srv.output().slice(-3000)}`,
      );

      srv.proc.kill('SIGTERM');
      assert.deepEqual(await srv.exited, { code: 0, signal: null }, 'a clean stop');

      assert.deepEqual(
        filesUnder(home),
        [],
        'onnxruntime kept nothing (device id, event cache) in HOME or its cache directory',
      );
      const lines = srv
        .stdout()
        .split('\n')
        .filter((l) => l !== '');
      assert.ok(lines.length >= 3, `the server logged to stdout (${lines.length} lines)`);
      assert.deepEqual(nonJsonLines(srv.stdout()), [], 'every stdout line is one JSON object');
      assert.doesNotMatch(srv.output(), /telemetry/i, 'nothing about telemetry on stdout or stderr');
    });
  }
});
