/**
 * `scripts/setup.sh` on a machine whose Node is too old even to fetch Node 24 from the npm registry
 * (its npm cannot read the lockfile): it stops before npm, with exit 1 and a message that says
 * what to do (install Node 24 yourself, then run setup again). The machine is stood in for by stubs
 * on PATH: `dpkg` says every Debian package is installed, `npm` and `node` are an old pair.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

describe('setup.sh on an old Node', () => {
  const dir = mkdtempSync(join(tmpdir(), 'setup-old-node-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const stub = (name: string, body: string): void => {
    writeFileSync(join(dir, name), `#!/bin/sh\n${body}\n`);
    chmodSync(join(dir, name), 0o755);
  };
  stub('dpkg', 'exit 0');
  stub('npm', 'if [ "$1" = --version ]; then echo 6.14.18; exit 0; fi\necho "npm stub: $*" >&2; exit 99');
  stub('node', 'if [ "$1" = --version ]; then echo v14.21.3; exit 0; fi\necho "node stub: $*" >&2; exit 99');

  test('npm 6 (Node 14): exit 1 before running npm, saying to install Node 24 and run setup again', () => {
    const r = spawnSync('bash', ['scripts/setup.sh'], {
      env: { ...process.env, PATH: `${dir}:${process.env.PATH ?? ''}` },
      encoding: 'utf8',
      timeout: 30_000,
    });
    const out = `${r.stdout}${r.stderr}`;
    assert.equal(r.status, 1, out);
    assert.match(r.stderr, /npm 6\.14\.18 \(Node v14\.21\.3\) is too old/, out);
    assert.match(r.stderr, /Install Node 24 yourself \(https:\/\/nodejs\.org\/en\/download/, out);
    assert.match(r.stderr, /run bash scripts\/setup\.sh again/, out);
    assert.doesNotMatch(out, /npm stub/, 'npm ci was not attempted');
  });
});
