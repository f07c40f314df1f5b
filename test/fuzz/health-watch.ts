/**
 * What every fuzz target checks after each case: no uncaught exception or unhandled rejection in
 * this process, and no line at error level in the server's log (it logs those only for its own
 * failures, never for a stranger's bad input). Each failure is reported once, against the case
 * that was running when it appeared.
 */
import type { LogWatch } from './log-watch.ts';

export interface HealthWatch {
  /** Uncaught exceptions and unhandled rejections since `watchHealth`. */
  readonly crashes: unknown[];
  /** Throws if anything crashed or logged an error line since the last call. */
  assertHealthy(what: string): void;
  /** Stops listening to the process (idempotent). */
  stop(): void;
}

export function watchHealth(logs: LogWatch): HealthWatch {
  const crashes: unknown[] = [];
  const onCrash = (err: unknown): void => {
    crashes.push(err);
  };
  process.on('uncaughtException', onCrash);
  process.on('unhandledRejection', onCrash);
  let crashesSeen = 0;
  let errorsSeen = 0;
  return {
    crashes,
    assertHealthy(what) {
      if (crashes.length > crashesSeen) {
        const err = crashes[crashesSeen];
        crashesSeen = crashes.length;
        throw new Error(
          `${what}: uncaught exception or unhandled rejection: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`,
        );
      }
      if (logs.errorCount() > errorsSeen) {
        const n = logs.errorCount() - errorsSeen;
        errorsSeen = logs.errorCount();
        throw new Error(
          `${what}: the server logged ${n} error line(s): ${JSON.stringify(logs.errors().slice(-n)).slice(0, 2000)}`,
        );
      }
    },
    stop() {
      process.off('uncaughtException', onCrash);
      process.off('unhandledRejection', onCrash);
    },
  };
}
