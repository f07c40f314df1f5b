/**
 * The simulator's CPU-window sampler reads /proc: a window in which a thread spins shows that
 * thread's group busy (the main thread, or a worker named `xz-media-0`), and a window in which
 * everything sleeps does not. Bounds are loose: CI's other tests share the CPUs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { parseCpuLine, startCpuSampler } from '../../bench/sim/cpu-window.ts';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const SPIN_MS = 400;

/** A worker that names itself as a media thread and spins for SPIN_MS on each message. */
const WORKER = `
const { parentPort } = require('node:worker_threads');
require('node:fs').writeFileSync('/proc/thread-self/comm', 'xz-media-0');
parentPort.on('message', () => {
  const t = performance.now(); let x = 0;
  while (performance.now() - t < ${SPIN_MS}) x += Math.sqrt(x + 1);
  parentPort.postMessage(x > 0);
});
parentPort.postMessage('ready');
`;

test('cpu window: a spinning thread is counted in its group, sleeping threads are not', { skip: existsSync('/proc/stat') ? false : 'needs Linux /proc (the simulator reports null elsewhere)' }, async () => {
  const worker = new Worker(WORKER, { eval: true });
  const next = (): Promise<unknown> => new Promise((resolve) => worker.once('message', resolve));
  assert.equal(await next(), 'ready');
  const sampler = startCpuSampler(20, { pid: process.pid, children: [] });
  assert.ok(sampler, 'a sampler on Linux');
  try {
    await sleep(60);
    const mainFrom = performance.now();
    let x = 0;
    while (performance.now() - mainFrom < SPIN_MS) x += Math.sqrt(x + 1);
    const mainTo = performance.now();
    assert.ok(x > 0);
    await sleep(60);
    const workerFrom = performance.now();
    worker.postMessage('spin');
    await next();
    const workerTo = performance.now();
    await sleep(60);
    const restFrom = performance.now();
    await sleep(SPIN_MS);
    const restTo = performance.now();
    await sleep(60);
    sampler.stop();

    const main = sampler.window(mainFrom, mainTo)?.server;
    const media = sampler.window(workerFrom, workerTo)?.server;
    const rest = sampler.window(restFrom, restTo)?.server;
    assert.ok(main && media && rest, 'every window is covered by samples');
    // One busy thread is 1/n of all CPUs; at least a third of that even on a crowded machine.
    const floor = 100 / availableParallelism() / 3;
    assert.ok(main.main > floor && main.media < main.main / 2, `main spinning: ${JSON.stringify(main)}`);
    assert.ok(media.media > floor && media.main < media.media / 2, `media thread spinning: ${JSON.stringify(media)}`);
    assert.ok(rest.total < Math.min(main.total, media.total) / 2, `sleeping: ${JSON.stringify(rest)}`);
    assert.ok(Math.abs(main.total - (main.main + main.providers + main.media + main.other + main.helpers)) < 0.01, 'the groups add up to the total');
    const w = sampler.window(mainFrom, mainTo);
    assert.ok(w && w.machineBusyPct >= main.total - 5, 'the machine is at least as busy as this process');
    assert.ok(w.stealPct >= 0 && w.stealPct <= w.machineBusyPct, `stolen time is part of the busy time: ${JSON.stringify(w)}`);
    assert.equal(sampler.window(restTo, restFrom), null, 'an empty window is null');
  } finally {
    sampler?.stop();
    await worker.terminate();
  }
});

test('cpu window: a main thread that shares the CPUs with three times as many spinning threads waits for one most of the time', { skip: existsSync('/proc/self/schedstat') ? false : 'needs Linux /proc schedstat (the report then leaves the wait out)' }, async () => {
  // 3n spinning threads and this one on n CPUs: this thread runs about n/(3n+1) of the time (under
  // a third) and waits the rest. Other load on the machine only makes it wait longer; reading the
  // run time instead of the wait gives under a third.
  const workers = Array.from({ length: 3 * availableParallelism() }, () => new Worker(WORKER, { eval: true }));
  const next = (w: Worker): Promise<unknown> => new Promise((resolve) => w.once('message', resolve));
  await Promise.all(workers.map(next));
  const sampler = startCpuSampler(20, { pid: process.pid, children: [] });
  assert.ok(sampler, 'a sampler on Linux');
  try {
    await sleep(60);
    const done = Promise.all(workers.map((w) => (w.postMessage('spin'), next(w))));
    const from = performance.now();
    let x = 0;
    while (performance.now() - from < SPIN_MS) x += Math.sqrt(x + 1);
    const to = performance.now();
    assert.ok(x > 0);
    await done;
    await sleep(60);
    sampler.stop();
    const w = sampler.window(from, to);
    assert.ok(w, 'the window is covered by samples');
    // This thread is both the "server's main thread" (its pid is given as the server's) and the simulator's.
    for (const k of ['serverMain', 'simulator'] as const) {
      const waited = w.cpuWaitMs[k];
      assert.ok(waited !== null, `${k} is read`);
      assert.ok(waited > w.ms / 2 && waited < w.ms + 50, `${k} waited ${waited} ms of ${w.ms} while ${workers.length} threads spun with it on ${availableParallelism()} CPUs`);
    }
  } finally {
    sampler?.stop();
    await Promise.all(workers.map((w) => w.terminate()));
  }
});

test("cpu window: the hypervisor's steal is its own field, part of busy, and guest time is not counted twice", () => {
  // A line as a Firecracker guest shows it: user nice system idle iowait irq softirq steal guest guest_nice.
  const m = parseCpuLine('cpu  2473799 479624 523234 5902972 21306 0 22395 169509 7 3');
  assert.deepEqual(m, { busy: 2473799 + 479624 + 523234 + 22395 + 169509, steal: 169509, total: 2473799 + 479624 + 523234 + 5902972 + 21306 + 22395 + 169509 });
  assert.equal(parseCpuLine('cpu  1 2 3'), null, 'a short line is refused, not read as zero steal');
  assert.equal(parseCpuLine(''), null);
});
