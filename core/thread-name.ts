/**
 * @module Names the calling thread for the operating system, so that `top -H`, `ps -L`, `perf`
 * and /proc show which of the server's threads is busy (a media worker, the provider thread)
 * instead of a row of `node`. Linux keeps a thread's name in `/proc/thread-self/comm` (15 bytes),
 * and a thread may write its own. Elsewhere nothing happens.
 */
import { writeFileSync } from 'node:fs';

/** Linux truncates a thread name to 15 bytes. */
const MAX_NAME = 15;

/** Sets the calling thread's name; false (never a throw) where that is not possible. */
export function nameThisThread(name: string): boolean {
  try {
    writeFileSync('/proc/thread-self/comm', name.replace(/[^\x20-\x7e]/g, '_').slice(0, MAX_NAME));
    return true;
  } catch {
    return false;
  }
}
