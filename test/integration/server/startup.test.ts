/**
 * Start-up as a real process: an invalid configuration stops it with exit code 2 and a message
 * naming the key; a provider that refuses its settings is reported the same way; a config file
 * holding a secret that other users can read is warned about.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

function start(
  configText: string,
  mode = 0o600,
): Promise<{ code: number | null; stderr: string; stdout: string; file: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'startup-'));
  const file = join(dir, 'config.yaml');
  writeFileSync(file, configText);
  chmodSync(file, mode);
  return new Promise((resolve) => {
    // Its own data directory (the database), not ./data of the checkout.
    const env = { ...process.env, XIAOZHI_DATA_DIR: join(dir, 'data') };
    const child = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts', '--config', file], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env,
    });
    let stderr = '';
    let stdout = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      rmSync(dir, { recursive: true, force: true });
      resolve({ code, stderr, stdout, file });
    });
  });
}

test('an invalid config file exits with code 2 and names the key', async () => {
  const r = await start('server:\n  port: "eighty"\nvad:\n  threshold: 3\n');
  assert.equal(r.code, 2);
  assert.match(r.stderr, /server\.port/);
  assert.match(r.stderr, /vad\.threshold/);
});

test('a provider refusing its settings (unknown espeak voice) exits with code 2 and says why', async () => {
  const r = await start('server: { port: 0 }\ntts: { provider: espeak, voice: no-such-voice-xx }\n');
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /no-such-voice-xx/);
});

test('a config file with a secret readable by others (0644) is warned about at start, naming the file and chmod 600', {
  skip: process.platform === 'win32' ? 'no POSIX modes' : false,
}, async () => {
  // The unknown voice stops the process right after the configuration is loaded and logged.
  const r = await start(
    'server: { port: 0 }\nllm: { apiKey: sk-file-secret-0123 }\ntts: { provider: espeak, voice: no-such-voice-xx }\n',
    0o644,
  );
  assert.equal(r.code, 2, r.stderr);
  const line = r.stdout.split('\n').find((l) => l.includes('chmod 600'));
  assert.ok(line, r.stdout);
  assert.ok(line.includes(r.file), line);
  assert.equal(JSON.parse(line).level, 40, 'a warning');
  assert.ok(!r.stdout.includes('sk-file-secret-0123'));
});
