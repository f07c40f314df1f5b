/**
 * When a reminder is due, from what the model writes: durations, local date-times in an IANA zone
 * (across both daylight-saving changes), explicit offsets, times of day, and refusals that say why.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fixedZone, formatLocal, instantOf, isTimeZone, namedZone } from '../../../mcp/local-tools/local-time.ts';
import { parseWhen, type WhenContext } from '../../../mcp/local-tools/reminder-when.ts';

const berlin = namedZone('Europe/Berlin');
const at = (iso: string): number => Date.parse(iso);

function due(when: string, ctx: WhenContext): string {
  const r = parseWhen(when, ctx);
  assert.ok(r.ok, `"${when}" was refused: ${r.ok ? '' : r.error}`);
  return new Date(r.dueMs).toISOString();
}

function refused(when: string, ctx: WhenContext): string {
  const r = parseWhen(when, ctx);
  assert.ok(!r.ok, `"${when}" was accepted`);
  return r.error;
}

describe('reminder times', () => {
  const ctx: WhenContext = { now: at('2026-11-27T17:00:00Z'), zone: berlin, maxDaysAhead: 366 };

  test('durations count from now', () => {
    assert.equal(due('PT10M', ctx), '2026-11-27T17:10:00.000Z');
    assert.equal(due('pt10m', ctx), '2026-11-27T17:10:00.000Z');
    assert.equal(due('PT1H30M', ctx), '2026-11-27T18:30:00.000Z');
    assert.equal(due('PT1.5H', ctx), '2026-11-27T18:30:00.000Z');
    assert.equal(due('P1D', ctx), '2026-11-28T17:00:00.000Z');
    assert.equal(due('P1W', ctx), '2026-12-04T17:00:00.000Z');
    assert.equal(due('P1DT2H', ctx), '2026-11-28T19:00:00.000Z');
    assert.equal(due(' PT45S ', ctx), '2026-11-27T17:00:45.000Z');
  });

  test('a local date-time is read in the device zone, and an explicit offset wins', () => {
    // Berlin is UTC+1 in November.
    assert.equal(due('2026-11-27T18:30', ctx), '2026-11-27T17:30:00.000Z');
    assert.equal(due('2026-11-27T18:30:15', ctx), '2026-11-27T17:30:15.000Z');
    assert.equal(due('2026-11-27 18:30', ctx), '2026-11-27T17:30:00.000Z');
    assert.equal(due('2026-11-28T18:30+08:00', ctx), '2026-11-28T10:30:00.000Z');
    assert.equal(due('2026-11-27T18:30:00Z', ctx), '2026-11-27T18:30:00.000Z');
    assert.equal(due('2026-11-27T18:30-05:30', ctx), '2026-11-28T00:00:00.000Z');
    // A zone known only as an offset (server.timezoneOffsetMinutes).
    assert.equal(due('2026-11-27T23:30', { ...ctx, zone: fixedZone(330) }), '2026-11-27T18:00:00.000Z');
    assert.equal(fixedZone(330).name, 'UTC+05:30');
    assert.equal(fixedZone(-300).name, 'UTC-05:00');
  });

  test('across the autumn change: the same wall time the next day is an hour later in UTC; a repeated hour is its first occurrence', () => {
    // Saturday 24 October 2026, 14:00 in Berlin (UTC+2); the clocks go back on Sunday at 03:00.
    const sat: WhenContext = { ...ctx, now: at('2026-10-24T12:00:00Z') };
    assert.equal(due('2026-10-25T14:00', sat), '2026-10-25T13:00:00.000Z');
    assert.equal(due('2026-10-25T02:30', sat), '2026-10-25T00:30:00.000Z');
    // A duration is exact time: 24 hours later is 13:00 on the clock.
    const r = parseWhen('PT24H', sat);
    assert.ok(r.ok);
    assert.equal(formatLocal(berlin, r.dueMs), 'Sunday 2026-10-25 13:00');
    assert.equal(formatLocal(berlin, at('2026-10-25T00:30:00Z')), 'Sunday 2026-10-25 02:30');
    assert.equal(formatLocal(berlin, at('2026-10-25T01:30:00Z')), 'Sunday 2026-10-25 02:30');
  });

  test('across the spring change: a skipped time lands after the change', () => {
    const sat: WhenContext = { ...ctx, now: at('2026-03-28T12:00:00Z') };
    // 29 March 2026: 02:00 becomes 03:00 (UTC+1 to UTC+2).
    assert.equal(due('2026-03-29T01:30', sat), '2026-03-29T00:30:00.000Z');
    assert.equal(due('2026-03-29T02:30', sat), '2026-03-29T01:30:00.000Z');
    assert.equal(due('2026-03-29T03:30', sat), '2026-03-29T01:30:00.000Z');
    assert.equal(due('2026-03-29T12:00', sat), '2026-03-29T10:00:00.000Z');
    // Also in a zone west of UTC (New York changed on 8 March 2026).
    const ny = namedZone('America/New_York');
    assert.equal(
      new Date(instantOf(ny, { year: 2026, month: 3, day: 8, hour: 12, minute: 0, second: 0 })).toISOString(),
      '2026-03-08T16:00:00.000Z',
    );
    assert.equal(
      new Date(instantOf(ny, { year: 2026, month: 3, day: 7, hour: 12, minute: 0, second: 0 })).toISOString(),
      '2026-03-07T17:00:00.000Z',
    );
  });

  test('a time of day is today, or tomorrow once it has passed', () => {
    // 18:00 local now.
    assert.equal(due('18:30', ctx), '2026-11-27T17:30:00.000Z');
    assert.equal(due('7:05', ctx), '2026-11-28T06:05:00.000Z');
    assert.equal(due('18:00', ctx), '2026-11-28T17:00:00.000Z');
  });

  test('refusals say what is wrong and what to give instead', () => {
    assert.match(refused('P1M', ctx), /months are not accepted/);
    assert.match(refused('P1Y', ctx), /years and months/);
    assert.match(refused('PT', ctx), /not an ISO-8601 duration/);
    assert.match(refused('P', ctx), /not an ISO-8601 duration/);
    assert.match(refused('PT0S', ctx), /at least one second/);
    assert.match(refused('in ten minutes', ctx), /not understood: give a duration from now like PT10M/);
    assert.match(refused('', ctx), /when is empty/);
    assert.match(refused('2026-02-30T10:00', ctx), /not a valid date-time/);
    assert.match(refused('2026-11-27T24:00', ctx), /not a valid date-time/);
    assert.match(refused('25:00', ctx), /not a valid time of day/);
    assert.match(refused('2026-11-27T18:30+15:00', ctx), /not a valid UTC offset/);
    assert.equal(
      refused('2026-11-27T17:30', ctx),
      'Friday 2026-11-27 17:30 has already passed: it is now Friday 2026-11-27 18:00 (Europe/Berlin)',
    );
    assert.match(refused('P367D', ctx), /at most 366 days ahead/);
    assert.match(refused('2028-01-01T10:00', { ...ctx, maxDaysAhead: 30 }), /at most 30 days ahead/);
  });

  test('zone names are checked', () => {
    assert.ok(isTimeZone('Asia/Shanghai'));
    assert.ok(isTimeZone('UTC'));
    assert.ok(!isTimeZone('Mars/Olympus'));
    assert.ok(!isTimeZone(''));
    assert.throws(() => namedZone('Mars/Olympus'), /unknown time zone "Mars\/Olympus"/);
  });
});
