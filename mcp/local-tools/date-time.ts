/**
 * @module Built-in tool: the current date and time (models do not know it). Returns a sentence the
 * model can quote plus `structuredContent` with the parts.
 */
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { LocalTool } from '../local-tools.ts';
import { textResult } from '../tool-source.ts';

export interface DateTimeToolOptions {
  /** IANA time zone, e.g. `Asia/Shanghai`; default the server's. */
  timeZone?: string;
  /** Clock, for tests. */
  now?: () => Date;
  /** Tool name; default `get_current_datetime`. */
  name?: string;
}

/** Creates the date/time tool. Throws `config_invalid` for an unknown time zone. */
export function dateTimeTool(opts: DateTimeToolOptions = {}): LocalTool {
  const timeZone = opts.timeZone ?? Intl.DateTimeFormat().resolvedOptions().timeZone;
  let fmt: Intl.DateTimeFormat;
  try {
    fmt = new Intl.DateTimeFormat('en-US', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      weekday: 'long',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
    });
  } catch (err) {
    throw new VoiceError(ErrorCode.ConfigInvalid, `unknown time zone "${timeZone}"`, { cause: err });
  }
  const now = opts.now ?? (() => new Date());
  return {
    name: opts.name ?? 'get_current_datetime',
    description: 'Get the current date, time and day of the week. Use it whenever the user asks about the time, the date or the day.',
    inputSchema: { type: 'object', properties: {} },
    async handler() {
      const p = Object.fromEntries(fmt.formatToParts(now()).map((x) => [x.type, x.value]));
      const date = `${p.year}-${p.month}-${p.day}`;
      const time = `${p.hour}:${p.minute}`;
      const weekday = p.weekday ?? '';
      return {
        ...textResult(`It is ${weekday}, ${date}, ${time} (${timeZone}).`),
        structuredContent: { date, time, seconds: Number(p.second), weekday, timeZone },
      };
    },
  };
}
