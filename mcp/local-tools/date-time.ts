/**
 * @module Built-in tool: the current date and time (models do not know it). Returns a sentence the
 * model can quote plus `structuredContent` with the parts.
 */
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { LocalTool } from '../contract/local-tool.ts';
import { textResult } from '../contract/tool-source.ts';

export interface DateTimeToolOptions {
  /** IANA time zone, e.g. `Asia/Shanghai`; default the server's. */
  timeZone?: string;
  /** The zone at each call (the device's agent may set one); undefined or unknown: `timeZone`. */
  zoneOf?: () => string | undefined;
  /** Clock, for tests. */
  now?: () => Date;
  /** Tool name; default `get_current_datetime`. */
  name?: string;
}

/** One formatter per zone for the process: they are costly to build and immutable. */
const formatters = new Map<string, Intl.DateTimeFormat>();

/** The zone's formatter. Throws `config_invalid` for an unknown time zone. */
function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let fmt = formatters.get(timeZone);
  if (fmt) return fmt;
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
  formatters.set(timeZone, fmt);
  return fmt;
}

/** Creates the date/time tool. Throws `config_invalid` for an unknown time zone. */
export function dateTimeTool(opts: DateTimeToolOptions = {}): LocalTool {
  const base = opts.timeZone ?? Intl.DateTimeFormat().resolvedOptions().timeZone;
  const baseFmt = formatterFor(base);
  const zone = (): { timeZone: string; fmt: Intl.DateTimeFormat } => {
    const tz = opts.zoneOf?.();
    if (tz === undefined || tz === base) return { timeZone: base, fmt: baseFmt };
    try {
      return { timeZone: tz, fmt: formatterFor(tz) };
    } catch {
      return { timeZone: base, fmt: baseFmt };
    }
  };
  const now = opts.now ?? (() => new Date());
  return {
    name: opts.name ?? 'get_current_datetime',
    description:
      'Get the current date, time and day of the week. Use it whenever the user asks about the time, the date or the day.',
    inputSchema: { type: 'object', properties: {} },
    async handler() {
      const { timeZone, fmt } = zone();
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
