/**
 * @module When a reminder is due, from what the model writes: an ISO-8601 duration from now
 * (`PT10M`, `PT1H30M`, `P1D`), a local date-time in the device's zone (`2026-11-27T18:30`,
 * seconds optional), the same with an explicit offset or `Z`, or a local time of day (`18:30`:
 * today, or tomorrow once passed). Every refusal is a sentence the model can act on.
 */
import { formatLocal, instantOf, localOf, type LocalZone } from './local-time.ts';

export interface WhenContext {
  /** Now, ms since the epoch. */
  now: number;
  zone: LocalZone;
  /** How far ahead a reminder may be, days. */
  maxDaysAhead: number;
}

export type WhenResult = { ok: true; dueMs: number } | { ok: false; error: string };

const NUM = String.raw`(\d+(?:\.\d+)?)`;
const DURATION = new RegExp(String.raw`^P(?:${NUM}W)?(?:${NUM}D)?(?:T(?:${NUM}H)?(?:${NUM}M)?(?:${NUM}S)?)?$`, 'i');
const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[T ](\d{1,2}):(\d{2})(?::(\d{2})(?:[.,]\d+)?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/i;
const TIME_OF_DAY = /^(\d{1,2}):(\d{2})(?::(\d{2}))?$/;

const UNIT_MS = [7 * 86_400_000, 86_400_000, 3_600_000, 60_000, 1000] as const;

const FORMATS = 'a duration from now like PT10M, PT1H30M or P1D, or a local date-time like 2026-11-27T18:30';

function fail(error: string): WhenResult {
  return { ok: false, error };
}

/** Milliseconds of an ISO-8601 duration (weeks, days, hours, minutes, seconds), or an error. */
function durationMs(text: string): number | string {
  if (/^P[^T]*\d[YM]/i.test(text))
    return 'years and months are not accepted in a duration: give days (P30D) or a date-time';
  const m = DURATION.exec(text);
  if (!m || /T$/i.test(text) || text.length < 3)
    return `"${text}" is not an ISO-8601 duration such as PT10M, PT1H30M or P1D`;
  let ms = 0;
  for (let i = 0; i < UNIT_MS.length; i++) {
    const v = m[i + 1];
    if (v !== undefined) ms += Number(v) * (UNIT_MS[i] ?? 0);
  }
  return Math.round(ms);
}

function validLocal(y: number, mo: number, d: number, h: number, mi: number, s: number): boolean {
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59) return false;
  return d <= new Date(Date.UTC(y, mo, 0)).getUTCDate();
}

/** Minutes east of UTC of `Z`, `+08`, `+0800` or `-05:30`. */
function offsetMinutes(text: string): number | undefined {
  if (text.toUpperCase() === 'Z') return 0;
  const m = /^([+-])(\d{2}):?(\d{2})?$/.exec(text);
  if (!m) return undefined;
  const h = Number(m[2]);
  const mi = Number(m[3] ?? '0');
  if (h > 14 || mi > 59) return undefined;
  return (m[1] === '-' ? -1 : 1) * (h * 60 + mi);
}

/** The instant `when` names, checked to be in the future and within `maxDaysAhead`. */
export function parseWhen(whenRaw: string, ctx: WhenContext): WhenResult {
  const when = whenRaw.trim();
  if (when === '') return fail(`when is empty: give ${FORMATS}`);
  let dueMs: number;
  if (/^P/i.test(when)) {
    const ms = durationMs(when);
    if (typeof ms === 'string') return fail(ms);
    if (ms < 1000) return fail('the duration must be at least one second (PT1S)');
    dueMs = ctx.now + ms;
  } else if (DATE_TIME.test(when)) {
    const m = DATE_TIME.exec(when) ?? [];
    const [y, mo, d, h, mi] = [1, 2, 3, 4, 5].map((i) => Number(m[i]));
    const s = Number(m[6] ?? '0');
    if (
      y === undefined ||
      mo === undefined ||
      d === undefined ||
      h === undefined ||
      mi === undefined ||
      !validLocal(y, mo, d, h, mi, s)
    ) {
      return fail(`"${when}" is not a valid date-time`);
    }
    const zone = m[7];
    if (zone !== undefined) {
      const off = offsetMinutes(zone);
      if (off === undefined) return fail(`"${zone}" is not a valid UTC offset (use Z, +08:00 or -05:30)`);
      dueMs = Date.UTC(y, mo - 1, d, h, mi, s) - off * 60_000;
    } else {
      dueMs = instantOf(ctx.zone, { year: y, month: mo, day: d, hour: h, minute: mi, second: s });
    }
  } else if (TIME_OF_DAY.test(when)) {
    const m = TIME_OF_DAY.exec(when) ?? [];
    const h = Number(m[1]);
    const mi = Number(m[2]);
    const s = Number(m[3] ?? '0');
    if (h > 23 || mi > 59 || s > 59) return fail(`"${when}" is not a valid time of day`);
    const today = localOf(ctx.zone, ctx.now);
    dueMs = instantOf(ctx.zone, { ...today, hour: h, minute: mi, second: s });
    if (dueMs <= ctx.now) {
      // Tomorrow's date, from noon today in UTC terms (never affected by the zone's changes).
      const t = new Date(Date.UTC(today.year, today.month - 1, today.day + 1, 12));
      dueMs = instantOf(ctx.zone, {
        year: t.getUTCFullYear(),
        month: t.getUTCMonth() + 1,
        day: t.getUTCDate(),
        hour: h,
        minute: mi,
        second: s,
      });
    }
  } else {
    return fail(`"${when}" is not understood: give ${FORMATS}`);
  }
  if (dueMs <= ctx.now)
    return fail(
      `${formatLocal(ctx.zone, dueMs)} has already passed: it is now ${formatLocal(ctx.zone, ctx.now)} (${ctx.zone.name})`,
    );
  if (dueMs - ctx.now > ctx.maxDaysAhead * 86_400_000)
    return fail(
      `that is more than ${ctx.maxDaysAhead} days ahead: reminders can be set at most ${ctx.maxDaysAhead} days ahead`,
    );
  return { ok: true, dueMs };
}
