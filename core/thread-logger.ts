/**
 * @module Logging from a worker thread: a `Logger` whose records are posted to the main thread,
 * which re-logs them through its own pino. One log pipeline for the whole process, so redaction by
 * value, levels and rate limits apply to worker lines too.
 */
import type { LogFn, Logger } from './logger.ts';

export type ThreadLogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal';

/** One record as it crosses the thread boundary (structured-clone safe: errors become messages). */
export interface ThreadLogRecord {
  level: ThreadLogLevel;
  obj: Record<string, unknown>;
  msg: string;
  /** The bindings of the child logger that produced the record. */
  bindings: Record<string, unknown>;
}

export function createThreadLogger(
  post: (rec: ThreadLogRecord) => void,
  bindings: Record<string, unknown> = {},
): Logger {
  const fn =
    (level: ThreadLogLevel): LogFn =>
    (a: object | string, b?: string) => {
      const obj = typeof a === 'string' ? {} : { ...(a as Record<string, unknown>) };
      const msg = typeof a === 'string' ? a : (b ?? '');
      // Error objects do not survive structured clone with their fields; their message does.
      for (const [k, v] of Object.entries(obj)) if (v instanceof Error) obj[k] = v.message;
      post({ level, obj, msg, bindings });
    };
  return {
    trace: fn('trace'),
    debug: fn('debug'),
    info: fn('info'),
    warn: fn('warn'),
    error: fn('error'),
    fatal: fn('fatal'),
    child: (more) => createThreadLogger(post, { ...bindings, ...more }),
  };
}
