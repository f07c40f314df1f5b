/**
 * @module A device's local time: its zone (an IANA name, or a fixed offset from UTC when only an
 * offset is configured), the local wall-clock time of an instant, and the instant of a local
 * wall-clock time, across daylight-saving changes. Pure: no clock is read here.
 */

/** A time zone as the reminder tools use it. */
export interface LocalZone {
  /** `Europe/Berlin`, or `UTC+05:30` for a fixed offset. */
  readonly name: string;
  /** Minutes east of UTC at the instant `utcMs`. */
  offsetMinutesAt(utcMs: number): number;
}

/** A local wall-clock time (month 1–12). */
export interface LocalDateTime {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

const WEEKDAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'] as const;

/** True when `name` is a time zone this runtime knows (IANA names such as `Asia/Shanghai`, `UTC`). */
export function isTimeZone(name: string): boolean {
  if (name.trim() === '' || name.length > 64) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/** A fixed offset from UTC, in minutes east (`480` is UTC+08:00). */
export function fixedZone(offsetMinutes: number): LocalZone {
  const sign = offsetMinutes < 0 ? '-' : '+';
  const abs = Math.abs(offsetMinutes);
  const name = `UTC${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
  return { name, offsetMinutesAt: () => offsetMinutes };
}

/** The Intl formatter of each zone, built once: they are costly to build and immutable. */
const formatters = new Map<string, Intl.DateTimeFormat>();

/** An IANA zone. Throws a `RangeError` naming the zone when the runtime does not know it. */
export function namedZone(name: string): LocalZone {
  let fmt = formatters.get(name);
  if (!fmt) {
    if (!isTimeZone(name)) throw new RangeError(`unknown time zone "${name}"`);
    fmt = new Intl.DateTimeFormat('en-US', {
      timeZone: name,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
      era: 'short',
    });
    formatters.set(name, fmt);
  }
  const f = fmt;
  return {
    name,
    offsetMinutesAt(utcMs) {
      const p: Record<string, string> = {};
      for (const x of f.formatToParts(new Date(utcMs))) p[x.type] = x.value;
      const year = p.era === 'BC' || p.era === 'B' ? 1 - Number(p.year) : Number(p.year);
      const asUtc = Date.UTC(
        year,
        Number(p.month) - 1,
        Number(p.day),
        Number(p.hour),
        Number(p.minute),
        Number(p.second),
      );
      // Whole seconds only: the offset is the difference rounded to a minute.
      return Math.round((asUtc - Math.floor(utcMs / 1000) * 1000) / 60_000);
    },
  };
}

/** The local wall-clock time of the instant `utcMs` in `zone`. */
export function localOf(zone: LocalZone, utcMs: number): LocalDateTime & { weekday: string } {
  const d = new Date(utcMs + zone.offsetMinutesAt(utcMs) * 60_000);
  return {
    year: d.getUTCFullYear(),
    month: d.getUTCMonth() + 1,
    day: d.getUTCDate(),
    hour: d.getUTCHours(),
    minute: d.getUTCMinutes(),
    second: d.getUTCSeconds(),
    weekday: WEEKDAYS[d.getUTCDay()] ?? '',
  };
}

const two = (n: number): string => String(n).padStart(2, '0');

/** `Friday 2026-11-27 18:30` (seconds only when not zero). */
export function formatLocal(zone: LocalZone, utcMs: number): string {
  const l = localOf(zone, utcMs);
  const secs = l.second === 0 ? '' : `:${two(l.second)}`;
  return `${l.weekday} ${l.year}-${two(l.month)}-${two(l.day)} ${two(l.hour)}:${two(l.minute)}${secs}`;
}

/**
 * The instant the local time `t` names in `zone`. A time that happens twice (clocks set back) is
 * the first of the two; a time that does not exist (clocks set forward over it) is read with the
 * offset before the change, so it lands as far after the change as it was meant after the
 * last valid time (02:30 on a night that skips 02:00–03:00 is 03:30).
 */
export function instantOf(zone: LocalZone, t: LocalDateTime): number {
  const wall = Date.UTC(t.year, t.month - 1, t.day, t.hour, t.minute, t.second);
  // The offsets a day either side cover any single change around this wall time.
  const before = zone.offsetMinutesAt(wall - 86_400_000);
  const after = zone.offsetMinutesAt(wall + 86_400_000);
  const candidates = [...new Set([before, after])]
    .map((off) => wall - off * 60_000)
    .filter((utc) => localMatches(zone, utc, wall));
  if (candidates.length > 0) return Math.min(...candidates);
  return wall - before * 60_000;
}

function localMatches(zone: LocalZone, utcMs: number, wall: number): boolean {
  return utcMs + zone.offsetMinutesAt(utcMs) * 60_000 === wall;
}
