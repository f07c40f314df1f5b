/**
 * @module Bounds repeated warnings: per message (log messages are static strings), `burst` lines at
 * once, then `perSecond`; a line that follows dropped ones carries `suppressed: n`. One limit is
 * shared by a logger and all its children, so a session's warnings are bounded wherever in the
 * session they come from: a device sending the same bad input in a loop costs a few lines, not one
 * per message.
 */
import type { LogFn, Logger } from './logger.ts';
import { TokenBucket, type RateLimit } from './token-bucket.ts';

/** Distinct messages tracked; beyond this, the rest share one budget (messages are static, so this is not reached in practice). */
const MAX_KEYS = 256;
const LIMITED_LEVELS = ['warn', 'error'] as const;

interface Budget {
  bucket: TokenBucket;
  suppressed: number;
}

export interface LogRateLimit {
  /** `log` with its warn and error lines counted against this limit (children included). */
  wrap(log: Logger): Logger;
  /** Lines dropped and not yet reported by a later line (for an end-of-life summary). */
  suppressed(): number;
}

export function createLogRateLimit(limit: RateLimit, now?: () => number): LogRateLimit {
  const budgets = new Map<string, Budget>();
  const budgetFor = (msg: string): Budget => {
    const key = budgets.size >= MAX_KEYS && !budgets.has(msg) ? '*' : msg;
    let b = budgets.get(key);
    if (!b) {
      b = { bucket: new TokenBucket(limit, now), suppressed: 0 };
      budgets.set(key, b);
    }
    return b;
  };
  const limited =
    (inner: LogFn): LogFn =>
    (a: object | string, b?: string) => {
      const obj = typeof a === 'string' ? {} : a;
      const msg = typeof a === 'string' ? a : (b ?? '');
      const budget = budgetFor(msg);
      if (!budget.bucket.take()) {
        budget.suppressed++;
        return;
      }
      const suppressed = budget.suppressed;
      budget.suppressed = 0;
      inner(suppressed > 0 ? { ...obj, suppressed } : obj, msg);
    };
  const wrap = (log: Logger): Logger => {
    // Everything but warn, error and child is the wrapped logger's own (through the prototype),
    // so a pino logger keeps its level, bindings() and the rest.
    const out = Object.create(log) as Logger;
    for (const level of LIMITED_LEVELS) out[level] = limited(log[level].bind(log) as LogFn);
    out.child = (bindings) => wrap(log.child(bindings));
    return out;
  };
  const suppressed = (): number => {
    let n = 0;
    for (const b of budgets.values()) n += b.suppressed;
    return n;
  };
  return { wrap, suppressed };
}
