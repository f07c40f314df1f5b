import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLogRateLimit } from '../../../core/log-rate-limit.ts';
import type { LogFn, Logger } from '../../../core/logger.ts';

interface Line {
  level: string;
  obj: Record<string, unknown>;
  msg: string;
}

function recorder(lines: Line[], bindings: Record<string, unknown> = {}): Logger {
  const fn =
    (level: string): LogFn =>
    (a: object | string, b?: string) =>
      void lines.push({
        level,
        obj: { ...bindings, ...(typeof a === 'string' ? {} : a) },
        msg: typeof a === 'string' ? a : (b ?? ''),
      });
  return {
    trace: fn('trace'),
    debug: fn('debug'),
    info: fn('info'),
    warn: fn('warn'),
    error: fn('error'),
    fatal: fn('fatal'),
    child: (more) => recorder(lines, { ...bindings, ...more }),
  };
}

test('a repeated warning: the burst, then one a second carrying the count of those dropped', () => {
  let now = 0;
  const lines: Line[] = [];
  const limit = createLogRateLimit({ perSecond: 1, burst: 3 }, () => now);
  const log = limit.wrap(recorder(lines));
  for (let i = 0; i < 10; i++) log.warn({ i }, 'bad input');
  assert.deepEqual(
    lines.map((l) => l.obj.i),
    [0, 1, 2],
  );
  assert.equal(limit.suppressed(), 7);
  now = 1000;
  log.warn({ i: 10 }, 'bad input');
  assert.deepEqual(lines.at(-1)?.obj, { i: 10, suppressed: 7 });
  assert.equal(limit.suppressed(), 0);
});

test("each message has its own budget, children share their parent's, info and debug are not limited", () => {
  const lines: Line[] = [];
  const limit = createLogRateLimit({ perSecond: 1, burst: 2 }, () => 0);
  const log = limit.wrap(recorder(lines));
  const child = log.child({ part: 'mcp' });
  log.error('a');
  child.error('a');
  child.error('a');
  log.warn('b');
  for (let i = 0; i < 5; i++) log.info('c');
  assert.deepEqual(
    lines.map((l) => `${l.level}:${l.msg}`),
    ['error:a', 'error:a', 'warn:b', 'info:c', 'info:c', 'info:c', 'info:c', 'info:c'],
  );
  assert.equal(lines[1]?.obj.part, 'mcp', 'the child keeps its bindings');
  assert.equal(limit.suppressed(), 1);
});
