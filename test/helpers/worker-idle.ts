/**
 * Test helper: waits until a worker thread runs no JavaScript, so that a test can end it the way a
 * crash does (`worker.terminate()`) at a safe moment. Terminating a thread while it is inside a
 * native addon's call (the Opus codec, onnxruntime) makes the addon's error handling abort the
 * whole process; a crash in the thread's own JavaScript does not. Call `terminate()` right after
 * this resolves, in the same tick, so that no new work reaches the thread in between.
 */
import type { Worker } from 'node:worker_threads';

/** Resolves once `worker`'s event loop has been idle for a whole `windowMs` window. */
export async function untilWorkerIdle(worker: Worker, ms = 20_000, windowMs = 20): Promise<void> {
  const deadline = Date.now() + ms;
  let last = worker.performance.eventLoopUtilization();
  for (;;) {
    await new Promise((r) => setTimeout(r, windowMs));
    const now = worker.performance.eventLoopUtilization();
    // Active time grows only while the thread runs; an idle loop adds (almost) none.
    if (worker.performance.eventLoopUtilization(now, last).active < 0.5) return;
    if (Date.now() > deadline) throw new Error(`worker thread still busy after ${ms} ms`);
    last = now;
  }
}
