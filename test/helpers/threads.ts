/** What /proc says about this process's threads (Linux only). */
import { readdirSync, readFileSync } from 'node:fs';

/** The names of this process's threads (`/proc/self/task/<tid>/comm`), sorted. */
export function threadNames(): string[] {
  const out: string[] = [];
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      out.push(readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim());
    } catch {
      // the thread ended while we looked
    }
  }
  return out.sort();
}
