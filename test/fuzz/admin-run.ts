/**
 * The admin API fuzz run, shared by the CI test (fixed seed, few runs) and `npm run fuzz` (many):
 * a server of its own with the admin token set, hostile admin requests from fast-check
 * (admin-arbitraries.ts) checked one by one (admin-property.ts), then the server checked up and
 * bounded once more.
 */
import fc from 'fast-check';
import { adminCase } from './admin-arbitraries.ts';
import { assertAdminServerUp, describeAdminStats, runAdminCase, startAdminTarget } from './admin-property.ts';

export interface AdminFuzzOptions {
  seed: number;
  runs: number;
  /** Stop starting new cases after this long. */
  timeLimitMs?: number;
  /** Called with the report line at the end, and every ~progressMs during the run. */
  progress?: (line: string) => void;
  progressMs?: number;
}

/** Returns the report line. Throws (after closing the server) on the first failing case. */
export async function runAdminFuzz(opts: AdminFuzzOptions): Promise<string> {
  const t = await startAdminTarget();
  const timer = opts.progress
    ? setInterval(() => opts.progress?.(describeAdminStats(t)), opts.progressMs ?? 10_000)
    : undefined;
  try {
    await fc.assert(
      fc.asyncProperty(adminCase, (c) => runAdminCase(t, c)),
      {
        seed: opts.seed,
        numRuns: opts.runs,
        ...(opts.timeLimitMs ? { interruptAfterTimeLimit: opts.timeLimitMs } : {}),
      },
    );
    await assertAdminServerUp(t, 'after the run');
    const line = describeAdminStats(t);
    opts.progress?.(line);
    return line;
  } finally {
    clearInterval(timer);
    await t.close();
  }
}
