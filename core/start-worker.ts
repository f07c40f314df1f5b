/**
 * @module Starts one of our worker-thread entry modules, from sources or compiled output alike.
 */
import { Worker, type WorkerOptions } from 'node:worker_threads';

/**
 * Starts the worker whose entry is `entry` (a path without extension, relative to `base`, the
 * caller's `import.meta.url`): the `.ts` file when running from sources, the `.js` file when compiled.
 */
export function startModuleWorker(base: string, entry: string, options: WorkerOptions): Worker {
  const ext = base.endsWith('.ts') ? '.ts' : '.js';
  const url = new URL(`${entry}${ext}`, base);
  if (ext === '.js') return new Worker(url, options);
  // Node 20 does not apply `--import tsx` to worker threads: the worker registers tsx's loader
  // itself before importing the TypeScript entry.
  const boot = `import('tsx/esm/api').then((m) => { m.register(); return import(${JSON.stringify(url.href)}); });`;
  return new Worker(boot, { ...options, eval: true });
}
