/**
 * Start-up as a real process: an invalid configuration stops it with exit code 2 and a message
 * naming the key; a provider that refuses its settings is reported the same way.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

function start(configText: string): Promise<{ code: number | null; stderr: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'startup-'));
  const file = join(dir, 'config.yaml');
  writeFileSync(file, configText);
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts', '--config', file], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      rmSync(dir, { recursive: true, force: true });
      resolve({ code, stderr });
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
