/**
 * The OTA fuzz run, shared by the CI test (fixed seed, few runs) and `npm run fuzz` (many): for
 * each auth mode a server of its own, hostile OTA requests from fast-check (ota-arbitraries.ts)
 * checked one by one (ota-property.ts), then the data directory measured once more and the server
 * restarted on it.
 */
import fc from 'fast-check';
import { otaCase } from './ota-arbitraries.ts';
import {
  assertDataBounded,
  describeOtaStats,
  runOtaCase,
  startOtaTarget,
  type OtaAuthMode,
  type OtaTarget,
} from './ota-property.ts';

export const OTA_MODES: readonly OtaAuthMode[] = ['open', 'activation'];

export interface OtaFuzzOptions {
  seed: number;
  /** fast-check runs per auth mode. */
  runsPerMode: number;
  /** Stop starting new cases in a mode after this long. */
  timeLimitMsPerMode?: number;
  /** Called with each mode's report line when it ends, and every ~progressMs during it. */
  progress?: (line: string) => void;
  progressMs?: number;
}

/** Runs every mode; returns one report line per mode. Throws (after closing the server) on the first failing case. */
export async function runOtaFuzz(opts: OtaFuzzOptions): Promise<string[]> {
  const lines: string[] = [];
  for (const mode of OTA_MODES) {
    const t: OtaTarget = await startOtaTarget(mode);
    const timer = opts.progress
      ? setInterval(() => opts.progress?.(describeOtaStats(t)), opts.progressMs ?? 10_000)
      : undefined;
    try {
      await fc.assert(
        fc.asyncProperty(otaCase, (c) => runOtaCase(t, c)),
        {
          seed: opts.seed,
          numRuns: opts.runsPerMode,
          ...(opts.timeLimitMsPerMode ? { interruptAfterTimeLimit: opts.timeLimitMsPerMode } : {}),
        },
      );
      assertDataBounded(t, `${mode} mode, after the run`);
      await t.restart();
      lines.push(describeOtaStats(t));
      opts.progress?.(lines.at(-1) as string);
    } finally {
      clearInterval(timer);
      await t.close();
    }
  }
  return lines;
}
