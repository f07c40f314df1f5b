/**
 * `.ci/container-smoke.sh` when no base image can be had: outside CI it says SKIPPED and exits 0
 * (a developer's machine may lack Docker Hub), under CI (`CI=true`) the same condition fails the
 * run, since a green run must have built and run the image. The condition is forced with stand-ins
 * on PATH: a `buildah` that has no image and cannot pull (so nothing is built), an `id` that says
 * root and a `mount` that fails (so the storage probe mounts nothing); no base-image tool.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

describe('container smoke: no base image', () => {
  const dir = mkdtempSync(join(tmpdir(), 'smoke-skip-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const stub = (name: string, body: string): void => {
    writeFileSync(join(dir, name), `#!/bin/sh\n${body}\n`);
    chmodSync(join(dir, name), 0o755);
  };
  stub(
    'buildah',
    'echo "Error: initializing source docker://node:24-bookworm-slim: pinging container registry: no route to host" >&2\nexit 125',
  );
  stub('id', 'if [ "$1" = -u ]; then echo 0; else exec /usr/bin/id "$@"; fi');
  stub('mount', 'exit 32');

  const run = (ci: string | undefined): { status: number | null; out: string } => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PATH: `${dir}:${process.env.PATH ?? ''}`,
      LOCAL_NODE_IMAGE: join(dir, 'no-such-tool'),
      XIAOZHI_BUILDAH_DRIVER: 'auto',
    };
    delete env.CI;
    if (ci !== undefined) env.CI = ci;
    const r = spawnSync('bash', ['.ci/container-smoke.sh'], { env, encoding: 'utf8', timeout: 60_000 });
    return { status: r.status, out: `${r.stdout}${r.stderr}` };
  };

  test('outside CI: SKIPPED with the reason, exit 0', () => {
    const r = run(undefined);
    assert.equal(r.status, 0, r.out);
    assert.match(r.out, /SKIPPED: .*no base image/, r.out);
  });

  test('under CI=true: the same condition fails the run', () => {
    const r = run('true');
    assert.notEqual(r.status, 0, r.out);
    assert.match(r.out, /FAILED: .*no base image/, r.out);
    assert.doesNotMatch(r.out, /SKIPPED/);
  });
});
