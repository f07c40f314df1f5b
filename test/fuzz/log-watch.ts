/**
 * A log destination for long fuzz runs: keeps counts by level and only the last few warn and
 * error lines (a sink that kept every line would be the memory growth we are looking for), and
 * tells the properties about any line at error level or above: the server logs those only for
 * its own failures, never for a device's bad input.
 */
import { Writable } from 'node:stream';
import type { LogSink } from '../helpers/log-sink.ts';

const KEEP = 200;

export interface LogWatch extends LogSink {
  /** Lines at level ≥ 50 (error, fatal) since the start. */
  errorCount(): number;
  /** The last error lines, newest last. */
  errors(): Array<Record<string, unknown>>;
  countsByMsg(level: number): Map<string, number>;
}

export function createLogWatch(): LogWatch {
  const lines: Array<Record<string, unknown>> = [];
  const errors: Array<Record<string, unknown>> = [];
  const byMsg = new Map<number, Map<string, number>>();
  let errorCount = 0;
  let partial = '';
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      const parts = (partial + chunk.toString()).split('\n');
      partial = parts.pop() ?? '';
      for (const line of parts) {
        if (!line.trim()) continue;
        let rec: Record<string, unknown>;
        try {
          rec = JSON.parse(line) as Record<string, unknown>;
        } catch {
          rec = { msg: line, level: 50 };
        }
        const level = Number(rec.level);
        if (level < 40) continue;
        const counts = byMsg.get(level) ?? new Map<string, number>();
        counts.set(String(rec.msg), (counts.get(String(rec.msg)) ?? 0) + 1);
        byMsg.set(level, counts);
        lines.push(rec);
        if (lines.length > KEEP) lines.shift();
        if (level >= 50) {
          errorCount++;
          errors.push(rec);
          if (errors.length > KEEP) errors.shift();
        }
      }
      cb();
    },
  });
  return {
    stream,
    lines,
    find: (msg) => lines.filter((l) => l.msg === msg),
    text: () => lines.map((l) => JSON.stringify(l)).join('\n'),
    errorCount: () => errorCount,
    errors: () => [...errors],
    countsByMsg: (level) => new Map(byMsg.get(level) ?? []),
  };
}
