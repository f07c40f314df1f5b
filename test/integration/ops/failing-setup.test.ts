// A test file whose set-up throws half-way must fail fast, not hang: the clean-up pattern of the
// e2e files (closeAll) closes what was started (here the fake LLM) even though the app never was.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import assert from 'node:assert/strict';

const helper = fileURLToPath(new URL('../../helpers/close-all.ts', import.meta.url));
const fake = fileURLToPath(new URL('../../fixtures/fake-openai.ts', import.meta.url));

test('a before() that throws after starting the fake LLM: the file fails and exits within seconds', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'failing-setup-'));
  try {
    const file = join(dir, 'broken.test.ts');
    await writeFile(
      file,
      `import { after, before, test } from 'node:test';
import { closeAll } from ${JSON.stringify(helper)};
import { startFakeOpenAi } from ${JSON.stringify(fake)};
let llm: { close(): Promise<void> } | undefined;
let srv: { close(): Promise<void> } | undefined;
before(async () => {
  llm = await startFakeOpenAi();
  throw new Error('the app failed to start');
});
after(async () => {
  await closeAll(srv, llm);
});
test('never runs', () => {});
`,
    );
    const started = performance.now();
    // Without NODE_TEST_CONTEXT the child is a test run of its own (exit code and report), not a
    // subtest reporting to this one.
    const env = { ...process.env };
    delete env.NODE_TEST_CONTEXT;
    const child = spawn(process.execPath, ['--import', 'tsx', '--test', file], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env,
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    clearTimeout(killer);
    const ms = performance.now() - started;
    assert.notEqual(code, null, `the test file hung and was killed after ${Math.round(ms)} ms`);
    assert.notEqual(code, 0, 'the file failed');
    assert.match(out, /the app failed to start/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
