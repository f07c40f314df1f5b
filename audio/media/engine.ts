/**
 * @module Creates the media engine the configuration asks for: worker threads (default: one per
 * core) or, with `workers: 0`, the in-process engine.
 */
import { availableParallelism } from 'node:os';
import { turnOffOnnxTelemetry } from '../vad/onnx-telemetry.ts';
import { createInProcessEngine } from './in-process.ts';
import type { MediaEngine, MediaEngineOptions } from './media.ts';
import { createWorkerPool } from './worker-pool.ts';

/** `auto` (or undefined): one worker per core the process may use. */
export function resolveWorkerCount(workers: number | 'auto' | undefined): number {
  return workers === undefined || workers === 'auto' ? availableParallelism() : workers;
}

export async function createMediaEngine(opts: MediaEngineOptions): Promise<MediaEngine> {
  // Before any worker starts: only the main thread can set the process environment they inherit.
  turnOffOnnxTelemetry();
  const config = {
    vadProvider: opts.vadProvider,
    espeak: opts.espeak,
    ...(opts.espeakEngine !== undefined ? { espeakEngine: opts.espeakEngine } : {}),
    ...(opts.sendAheadMs !== undefined ? { sendAheadMs: opts.sendAheadMs } : {}),
    ...(opts.preBufferFrames !== undefined ? { preBufferFrames: opts.preBufferFrames } : {}),
  };
  if (opts.workers <= 0) return createInProcessEngine(config, opts.log);
  return createWorkerPool(opts.workers, config, opts.log, {
    nice: opts.workerNice ?? 0,
    ...(opts.onWorker ? { onWorker: opts.onWorker } : {}),
  });
}
