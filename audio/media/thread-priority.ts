/**
 * @module Lowers the scheduling priority of the calling thread. Linux schedules threads as tasks
 * and `setpriority(PRIO_PROCESS, tid)` changes only that task, so a worker thread can make itself
 * nicer without touching the main thread. `/proc/thread-self` names the calling thread's task id;
 * elsewhere (macOS, Windows) there is no per-thread niceness and the call reports why.
 */
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';

export type PriorityResult = { ok: true; tid: number } | { ok: false; reason: string };

/** Sets the calling thread's niceness to `nice` (0..19). Never throws. */
export function lowerThreadPriority(nice: number): PriorityResult {
  let tid: number;
  try {
    tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
  } catch {
    return { ok: false, reason: 'no /proc/thread-self (per-thread niceness needs Linux)' };
  }
  if (!Number.isInteger(tid) || tid <= 0) return { ok: false, reason: 'cannot read this thread id' };
  try {
    setPriority(tid, Math.min(19, Math.max(0, Math.round(nice))));
    return { ok: true, tid };
  } catch (err) {
    return { ok: false, reason: err instanceof Error ? err.message : String(err) };
  }
}
