/**
 * The simulator's machine probe reads /proc on a thread of its own: a window in which a thread
 * spins shows that thread's group busy (the main thread, or a worker named `xz-media-0`), and a
 * window in which everything sleeps does not; the server's RSS is sampled too. Bounds are loose:
 * CI's other tests share the CPUs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { parseCpuLine, startMachineProbe, timerJitter, type Sample } from '../../bench/sim/cpu-window.ts';
import { sleep } from '../../helpers/wait.ts';

const SPIN_MS = 400;
/** A spin ends after this much wall time even if the machine gave it less CPU than asked. */
const SPIN_CAP_MS = 10_000;

/**
 * A worker that names itself as a media thread. On 'spin' it spins until the process has used
 * SPIN_MS more CPU (the main thread waits meanwhile), however long a crowded machine takes; given
 * a number it spins for that many ms of wall time instead (several workers spinning together would
 * otherwise stop early: the process's CPU count is all threads').
 */
const WORKER = `
const { parentPort } = require('node:worker_threads');
require('node:fs').writeFileSync('/proc/thread-self/comm', 'xz-media-0');
parentPort.on('message', (m) => {
  if (typeof m === 'number') {
    const t = performance.now(); let y = 0;
    while (performance.now() - t < m) y += Math.sqrt(y + 1);
    parentPort.postMessage(y > 0);
    return;
  }
  const c0 = process.cpuUsage(); const until = performance.now() + ${SPIN_CAP_MS}; let x = 0;
  for (;;) {
    const c = process.cpuUsage(c0);
    if ((c.user + c.system) / 1000 >= ${SPIN_MS} || performance.now() > until) break;
    for (let i = 0; i < 10000; i++) x += Math.sqrt(x + 1);
  }
  parentPort.postMessage(x > 0);
});
parentPort.postMessage('ready');
`;

const cpuMsSince = (from: NodeJS.CpuUsage): number => {
  const c = process.cpuUsage(from);
  return (c.user + c.system) / 1000;
};

/** This process's CPU since `from`, as a percentage of all CPUs over `wallMs` (the probe's unit). */
function processPct(from: NodeJS.CpuUsage, wallMs: number): number {
  const c = process.cpuUsage(from);
  return ((c.user + c.system) / 1000 / wallMs / availableParallelism()) * 100;
}

test('cpu window: a spinning thread is counted in its group, sleeping threads are not', {
  skip: existsSync('/proc/stat') ? false : 'needs Linux /proc (the simulator reports null elsewhere)',
}, async () => {
  const worker = new Worker(WORKER, { eval: true });
  const next = (): Promise<unknown> => new Promise((resolve) => worker.once('message', resolve));
  assert.equal(await next(), 'ready');
  const sampler = await startMachineProbe({ everyMs: 20, rssEveryMs: 50, server: { pid: process.pid, children: [] } });
  assert.ok(sampler, 'a probe on Linux');
  try {
    assert.equal(sampler.window(0, performance.now()), null, 'no window before the samples are fetched');
    await sleep(60);
    const mainFrom = performance.now();
    const mainCpu = process.cpuUsage();
    let x = 0;
    while (cpuMsSince(mainCpu) < SPIN_MS && performance.now() - mainFrom < SPIN_CAP_MS)
      for (let i = 0; i < 10_000; i++) x += Math.sqrt(x + 1);
    const mainTo = performance.now();
    const mainPct = processPct(mainCpu, mainTo - mainFrom);
    assert.ok(x > 0);
    await sleep(60);
    const workerFrom = performance.now();
    const workerCpu = process.cpuUsage();
    worker.postMessage('spin');
    await next();
    const workerTo = performance.now();
    const workerPct = processPct(workerCpu, workerTo - workerFrom);
    await sleep(60);
    const restFrom = performance.now();
    await sleep(SPIN_MS);
    const restTo = performance.now();
    await sleep(60);
    await sampler.stop();

    const main = sampler.window(mainFrom, mainTo)?.server;
    const media = sampler.window(workerFrom, workerTo)?.server;
    const rest = sampler.window(restFrom, restTo)?.server;
    assert.ok(main && media && rest, 'every window is covered by samples');
    // The spinning thread's group shows most of what the process itself counted in the window
    // (however much CPU a crowded machine gave it), the other groups little of it.
    assert.ok(
      main.main > mainPct / 2 && main.media < main.main / 2,
      `main spinning (process ${mainPct.toFixed(1)} %): ${JSON.stringify(main)}`,
    );
    assert.ok(
      media.media > workerPct / 2 && media.main < media.media / 2,
      `media thread spinning (process ${workerPct.toFixed(1)} %): ${JSON.stringify(media)}`,
    );
    assert.ok(rest.total < Math.min(main.total, media.total) / 2, `sleeping: ${JSON.stringify(rest)}`);
    assert.ok(
      Math.abs(main.total - (main.main + main.providers + main.media + main.other + main.helpers)) < 0.01,
      'the groups add up to the total',
    );
    const w = sampler.window(mainFrom, mainTo);
    assert.ok(w && w.machineBusyPct >= main.total - 5, 'the machine is at least as busy as this process');
    assert.ok(
      w.stealPct >= 0 && w.stealPct <= w.machineBusyPct,
      `stolen time is part of the busy time: ${JSON.stringify(w)}`,
    );
    assert.equal(sampler.window(restTo, restFrom), null, 'an empty window is null');
    // This process's RSS, as the server's: the probe's peak is at least what it has now (nothing
    // was freed on purpose) and within a factor of it.
    const rssNow = process.memoryUsage().rss;
    const rss = sampler.rss();
    assert.ok(rss?.peak && rss.hwm, `an RSS peak and high-water mark: ${JSON.stringify(rss)}`);
    assert.ok(
      rss.peak > rssNow / 2 && rss.peak < rssNow * 2 && rss.hwm >= rss.peak / 2,
      `RSS peak ${rss.peak} against ${rssNow} now`,
    );
  } finally {
    await sampler?.stop();
    await worker.terminate();
  }
});

test('cpu window: a main thread that shares the CPUs with three times as many spinning threads waits for one most of the time', {
  skip: existsSync('/proc/self/schedstat')
    ? false
    : 'needs Linux /proc schedstat (the report then leaves the wait out)',
}, async () => {
  // 3n spinning threads and this one on n CPUs: this thread runs about n/(3n+1) of the time (under
  // a third) and waits the rest. Other load on the machine only makes it wait longer; reading the
  // run time instead of the wait gives under a third.
  const workers = Array.from({ length: 3 * availableParallelism() }, () => new Worker(WORKER, { eval: true }));
  const next = (w: Worker): Promise<unknown> => new Promise((resolve) => w.once('message', resolve));
  await Promise.all(workers.map(next));
  const sampler = await startMachineProbe({ everyMs: 20, server: { pid: process.pid, children: [] } });
  assert.ok(sampler, 'a probe on Linux');
  try {
    await sleep(60);
    // The workers spin (wall time) past the end of this thread's window, so they crowd all of it.
    const done = Promise.all(workers.map((w) => (w.postMessage(SPIN_MS + 300), next(w))));
    const from = performance.now();
    let x = 0;
    while (performance.now() - from < SPIN_MS) x += Math.sqrt(x + 1);
    const to = performance.now();
    assert.ok(x > 0);
    await done;
    await sleep(60);
    await sampler.stop();
    const w = sampler.window(from, to);
    assert.ok(w, 'the window is covered by samples');
    // This thread is both the "server's main thread" (its pid is given as the server's) and the simulator's.
    for (const k of ['serverMain', 'simulator'] as const) {
      const waited = w.cpuWaitMs[k];
      assert.ok(waited !== null, `${k} is read`);
      assert.ok(
        waited > w.ms / 2 && waited < w.ms + 50,
        `${k} waited ${waited} ms of ${w.ms} while ${workers.length} threads spun with it on ${availableParallelism()} CPUs`,
      );
    }
    assert.equal(sampler.rss(), null, 'no RSS without rssEveryMs');
  } finally {
    await sampler?.stop();
    await Promise.all(workers.map((w) => w.terminate()));
  }
});

test("cpu window: the hypervisor's steal is its own field, part of busy, and guest time is not counted twice", () => {
  // A line as a Firecracker guest shows it: user nice system idle iowait irq softirq steal guest guest_nice.
  const m = parseCpuLine('cpu  2473799 479624 523234 5902972 21306 0 22395 169509 7 3');
  assert.deepEqual(m, {
    busy: 2473799 + 479624 + 523234 + 22395 + 169509,
    steal: 169509,
    total: 2473799 + 479624 + 523234 + 5902972 + 21306 + 22395 + 169509,
  });
  assert.equal(parseCpuLine('cpu  1 2 3'), null, 'a short line is refused, not read as zero steal');
  assert.equal(parseCpuLine(''), null);
});

test("cpu window: the probe timer's late ticks are counted in the window only, from over 5 ms", () => {
  const sample = (at: number, tickLateMs: number | null): Sample => ({
    at,
    tickLateMs,
    busy: 0,
    steal: 0,
    total: 0,
    ticks: { process: 0, main: 0, providers: 0, media: 0, helpers: 0, simulator: 0, fakes: 0 },
    waitNs: { serverMain: null, simulator: null },
  });
  const samples = [
    sample(0, null),
    sample(20, 0.4),
    sample(40, 5),
    sample(60, 5.1),
    sample(80, 30),
    sample(100, null),
    sample(120, 50),
  ];
  assert.deepEqual(
    timerJitter(samples, 10, 110),
    { ticks: 4, late: 2, maxLateMs: 30 },
    'exactly 5 ms is on time; untimed samples and those outside do not count',
  );
  assert.equal(timerJitter(samples, 0, 10), null, 'no tick in the window');
});

test('cpu window: the probe samples on its schedule, about one tick per period', {
  skip: existsSync('/proc/stat') ? false : 'needs Linux /proc',
}, async () => {
  const probe = await startMachineProbe({ everyMs: 20, server: null });
  assert.ok(probe, 'a probe on Linux');
  const from = performance.now();
  await sleep(400);
  const to = performance.now();
  await probe.stop();
  const w = probe.window(from, to);
  assert.ok(w?.timer, 'ticks in the window');
  // 400 ms of 20 ms ticks: 20, less any a crowded CI machine made the timer skip.
  assert.ok(w.timer.ticks >= 8 && w.timer.ticks <= 21, JSON.stringify(w.timer));
  assert.equal(w.server, null, 'no server given');
});
