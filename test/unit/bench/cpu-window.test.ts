/**
 * The simulator's CPU-window sampler reads /proc: a window in which this process spins shows it
 * busy, a window in which it sleeps does not. Bounds are loose (CI's other tests share the CPUs).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { startCpuSampler } from '../../bench/sim/cpu-window.ts';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

test('cpu window: this process spinning is counted, sleeping is not', { skip: existsSync('/proc/stat') ? false : 'needs Linux /proc (the simulator reports null elsewhere)' }, async () => {
  const sampler = startCpuSampler(20, [process.pid]);
  assert.ok(sampler, 'a sampler on Linux');
  try {
    await sleep(60);
    const spinFrom = performance.now();
    let x = 0;
    while (performance.now() - spinFrom < 400) x += Math.sqrt(x + 1);
    const spinTo = performance.now();
    assert.ok(x > 0);
    await sleep(60);
    const restFrom = performance.now();
    await sleep(400);
    const restTo = performance.now();
    await sleep(60);
    sampler.stop();

    const spin = sampler.window(spinFrom, spinTo);
    const rest = sampler.window(restFrom, restTo);
    assert.ok(spin && rest, 'both windows are covered by samples');
    // One busy thread is 1/n of all CPUs; at least a third of that even on a crowded machine.
    const oneCpu = 100 / availableParallelism();
    assert.ok(spin.watchedPct > oneCpu / 3, `spinning: ${spin.watchedPct.toFixed(1)} % of all CPUs`);
    assert.ok(spin.machineBusyPct >= spin.watchedPct - 5, 'the machine is at least as busy as this process');
    assert.ok(rest.watchedPct < spin.watchedPct / 2, `sleeping: ${rest.watchedPct.toFixed(1)} % against ${spin.watchedPct.toFixed(1)} % spinning`);
    assert.ok(spin.ms >= 400 && spin.ms < 1000, `window length ${spin.ms}`);
    assert.equal(sampler.window(restTo, restFrom), null, 'an empty window is null');
  } finally {
    sampler?.stop();
  }
});
