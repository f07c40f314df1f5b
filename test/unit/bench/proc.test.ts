/**
 * The simulator's /proc reader keeps files open: each read must return the file's current
 * content (not what the first read saw), and a process that ended must read as gone, and stay
 * gone, rather than fail the sampler.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { once } from 'node:events';
import { ProcFiles, statFieldsOf } from '../../bench/sim/proc.ts';

const linux = existsSync('/proc/self/stat') ? false : 'needs Linux /proc';
const cpuMs = (c: NodeJS.CpuUsage): number => (c.user + c.system) / 1000;

test('proc files: a kept-open file is read afresh each time', { skip: linux }, () => {
  const files = new ProcFiles();
  try {
    const ticks = (): number => {
      const f = statFieldsOf(files.read(`/proc/${process.pid}/task/${process.pid}/stat`) ?? '');
      return Number(f[11]) + Number(f[12]);
    };
    const before = ticks();
    // Spin until this thread has had 200 ms of CPU, however long a crowded machine takes to give it.
    const cpu0 = process.cpuUsage();
    const until = performance.now() + 30_000;
    let x = 0;
    while (cpuMs(process.cpuUsage(cpu0)) < 200 && performance.now() < until)
      for (let i = 0; i < 10_000; i++) x += Math.sqrt(x + 1);
    assert.ok(x > 0);
    // 200 ms of CPU is 20 ticks at 100 Hz; a re-read of stale content would show none.
    assert.ok(ticks() - before >= 5, `utime+stime grew: ${before} → ${ticks()}`);
  } finally {
    files.close();
  }
});

test('proc files: the file of a process that ended reads as null, and stays null', { skip: linux }, async () => {
  const files = new ProcFiles();
  const child = spawn('sleep', ['30'], { stdio: 'ignore' });
  try {
    const path = `/proc/${child.pid}/stat`;
    const first = files.read(path);
    assert.ok(first && statFieldsOf(first)[1] === String(process.pid), `the child's stat names us as parent: ${first}`);
    child.kill('SIGKILL');
    await once(child, 'exit');
    assert.equal(files.read(path), null, 'gone once reaped');
    assert.equal(files.read(path), null, 'still null on the next read');
    assert.equal(files.read('/proc/no-such-file'), null, 'a file that never opened is null too');
  } finally {
    child.kill('SIGKILL');
    files.close();
  }
});

test('proc files: stat fields are counted after the command name, which may hold spaces and parentheses', () => {
  assert.deepEqual(statFieldsOf('123 (a (b) c) S 1 2').slice(0, 3), ['S', '1', '2']);
});
