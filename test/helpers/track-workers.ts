/**
 * Test helper: tracks the worker threads a test starts, so it can check that closing really ends
 * them and that a file never hangs on a leftover one.
 */
import { createRequire, syncBuiltinESMExports } from 'node:module';
import type { Worker } from 'node:worker_threads';

/**
 * Every worker thread started while installed, whether it has exited, so a test can check that
 * close really ends them and the file never hangs on a leftover one. Swaps the `Worker` export of
 * node:worker_threads (its ESM bindings follow via `syncBuiltinESMExports`).
 */
export function trackWorkers(): { tracked: Array<{ worker: Worker; exited: boolean }>; restore(): Promise<number> } {
  const wt = createRequire(import.meta.url)('node:worker_threads') as { Worker: typeof Worker };
  const Original = wt.Worker;
  const tracked: Array<{ worker: Worker; exited: boolean }> = [];
  wt.Worker = class extends Original {
    constructor(...args: ConstructorParameters<typeof Worker>) {
      super(...args);
      const t = { worker: this as Worker, exited: false };
      tracked.push(t);
      this.once('exit', () => {
        t.exited = true;
      });
    }
  };
  syncBuiltinESMExports();
  return {
    tracked,
    /** Uninstalls; terminates and counts the workers still running. */
    restore: async () => {
      wt.Worker = Original;
      syncBuiltinESMExports();
      const left = tracked.filter((t) => !t.exited);
      await Promise.allSettled(left.map((t) => t.worker.terminate()));
      return left.length;
    },
  };
}
