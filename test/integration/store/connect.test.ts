/**
 * Opening a SQLite file that is not a database fails with a StoreError naming the file, and leaves
 * no file descriptor on it behind (a server that retries, or a CLI that reports and goes on, would
 * otherwise keep one open per attempt). A PostgreSQL URL that cannot be reached is named in the
 * message without its password, whether it is written in the userinfo or as a query parameter.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, redactUrl, StoreError } from '../../../store/connect.ts';
import { silentLogger } from '../../../core/logger.ts';

/** How many of this process's file descriptors point at `file` (Linux's /proc). */
function openDescriptorsOn(file: string): number {
  let n = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`) === file) n++;
    } catch {
      // The descriptor readdir itself used, gone by now.
    }
  }
  return n;
}

test('a file that is not a SQLite database: StoreError, and its handle is closed', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'store-connect-'));
  try {
    const file = join(dir, 'xiaozhi.db');
    writeFileSync(file, 'this is not a database, but it is long enough to have a header of sorts. '.repeat(20));
    await assert.rejects(
      connect('sqlite:xiaozhi.db', dir, silentLogger),
      (err: unknown) => err instanceof StoreError && err.message.includes(file),
    );
    assert.equal(openDescriptorsOn(file), 0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an unreachable PostgreSQL URL: the message names it, never its password', async () => {
  for (const url of [
    'postgres://app:hunter2@127.0.0.1:1/xiaozhi',
    'postgres://127.0.0.1:1/xiaozhi?user=app&password=hunter2',
  ]) {
    assert.doesNotMatch(redactUrl(url), /hunter2/);
    await assert.rejects(connect(url, tmpdir(), silentLogger), (err: unknown) => {
      assert.ok(err instanceof StoreError);
      assert.match(err.message, /127\.0\.0\.1:1\/xiaozhi/);
      assert.doesNotMatch(err.message, /hunter2/);
      return true;
    });
  }
});
