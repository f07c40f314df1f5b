/** A pino destination that keeps parsed log lines in memory, so tests can assert on logs. */
import { Writable } from 'node:stream';

export interface LogSink {
  stream: Writable;
  lines: Array<Record<string, unknown>>;
  /** Lines whose `msg` equals `msg`. */
  find(msg: string): Array<Record<string, unknown>>;
  text(): string;
}

export function createLogSink(echo = process.env.TEST_LOG === '1'): LogSink {
  const lines: Array<Record<string, unknown>> = [];
  let raw = '';
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      const s = chunk.toString();
      raw += s;
      if (echo) process.stderr.write(s);
      for (const line of s.split('\n')) {
        if (!line.trim()) continue;
        try {
          lines.push(JSON.parse(line) as Record<string, unknown>);
        } catch {
          lines.push({ msg: line });
        }
      }
      cb();
    },
  });
  return { stream, lines, find: (msg) => lines.filter((l) => l.msg === msg), text: () => raw };
}
