/** `store.password` (env DATABASE_PASSWORD): kept apart from `store.url`, joined to it encoded. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../../server/config.ts';
import { withPassword } from '../../../store/connect.ts';

test('DATABASE_PASSWORD sets store.password, taken as it is', () => {
  const dir = mkdtempSync(join(tmpdir(), 'store-password-'));
  try {
    const { config, overrides } = loadConfig({
      argv: [],
      env: { DATABASE_URL: 'postgres://app@db:5432/x', DATABASE_PASSWORD: 'a@b/c:d%e f' },
      cwd: dir,
    });
    assert.equal(config.store.password, 'a@b/c:d%e f');
    assert.deepEqual(overrides.sort(), ['DATABASE_PASSWORD', 'DATABASE_URL']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('withPassword: percent-encodes into the userinfo (replacing one there); empty or SQLite leaves the URL alone', () => {
  const url = withPassword('postgres://app:old@db:5432/x?sslmode=require', 'a@b/c:d%e f');
  const u = new URL(url);
  assert.equal(decodeURIComponent(u.password), 'a@b/c:d%e f');
  assert.equal(u.username, 'app');
  assert.equal(u.host, 'db:5432');
  assert.equal(u.pathname, '/x');
  assert.equal(u.search, '?sslmode=require');
  assert.equal(withPassword('postgres://app@db/x', ''), 'postgres://app@db/x');
  assert.equal(withPassword('sqlite:xiaozhi.db', 'secret'), 'sqlite:xiaozhi.db');
});
