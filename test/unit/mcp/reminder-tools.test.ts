/**
 * The reminder tools: their descriptions carry the device's local time (current at each listing),
 * set answers with the local time it rings, bad `when` and full devices are tool errors the model
 * can act on, and list / cancel reach only the target they were made with.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  humanDelay,
  reminderTools,
  type ReminderEntry,
  type ReminderToolTarget,
} from '../../../mcp/local-tools/reminder-tools.ts';
import { namedZone } from '../../../mcp/local-tools/local-time.ts';
import { createLocalTools } from '../../../mcp/local-tools.ts';

function target(clock: { now: number }, max = 3): ReminderToolTarget & { rows: ReminderEntry[]; serverFull: boolean } {
  const rows: ReminderEntry[] = [];
  let next = 1;
  const t: ReminderToolTarget & { rows: ReminderEntry[]; serverFull: boolean } = {
    rows,
    serverFull: false,
    zone: () => namedZone('Europe/Berlin'),
    now: () => clock.now,
    maxPerDevice: max,
    maxDaysAhead: 30,
    maxChars: 200,
    add: async (dueMs, text) => {
      if (t.serverFull) return 'store_full';
      if (rows.length >= max) return 'full';
      const r = { id: next++, dueMs, text };
      rows.push(r);
      return r;
    },
    list: async () => [...rows].sort((a, b) => a.dueMs - b.dueMs),
    cancel: async (id) => {
      const i = rows.findIndex((r) => r.id === id);
      if (i < 0) return false;
      rows.splice(i, 1);
      return true;
    },
  };
  return t;
}

const text = (r: { content: Array<{ type: string; text?: string }> }): string =>
  r.content.map((c) => c.text ?? '').join('');
const signal = new AbortController().signal;

describe('reminder tools', () => {
  test('the descriptions tell the formats and the local time now, read at each listing', async () => {
    const clock = { now: Date.parse('2026-11-27T17:00:00Z') };
    const tools = createLocalTools(reminderTools(target(clock)));
    const set = (await tools.listTools()).find((t) => t.name === 'set_reminder');
    assert.match(set?.description ?? '', /PT10M/);
    assert.match(set?.description ?? '', /2026-11-27T18:30/);
    assert.match(set?.description ?? '', /local time now is Friday 2026-11-27 18:00 \(time zone Europe\/Berlin\)/);
    clock.now += 3_600_000;
    const later = await tools.listTools();
    assert.match(later.find((t) => t.name === 'set_reminder')?.description ?? '', /Friday 2026-11-27 19:00/);
    assert.match(later.find((t) => t.name === 'list_reminders')?.description ?? '', /Friday 2026-11-27 19:00/);
  });

  test('set answers with the local time it rings; list and cancel by the id it gave', async () => {
    const clock = { now: Date.parse('2026-11-27T17:00:00Z') };
    const mine = target(clock);
    const other = target(clock);
    const tools = createLocalTools(reminderTools(mine));
    const set = await tools.callTool('set_reminder', { when: 'PT10M', text: ' take the tea out ' }, { signal });
    assert.equal(set.isError, false);
    assert.equal(
      text(set),
      'Reminder 1 set for Friday 2026-11-27 18:10 (Europe/Berlin), in 10 minutes: "take the tea out". Tell the user when it will ring.',
    );
    assert.deepEqual(set.structuredContent, {
      id: '1',
      dueLocal: 'Friday 2026-11-27 18:10',
      timeZone: 'Europe/Berlin',
      dueUtc: '2026-11-27T17:10:00.000Z',
      text: 'take the tea out',
    });
    assert.equal(
      text(await tools.callTool('set_reminder', { when: '2026-11-28T07:00', text: 'call Mum' }, { signal })).startsWith(
        'Reminder 2 set for Saturday 2026-11-28 07:00 (Europe/Berlin), in 13 hours',
      ),
      true,
    );
    assert.deepEqual(other.rows, []);
    assert.equal(
      text(await tools.callTool('list_reminders', {}, { signal })),
      '2 reminders (Europe/Berlin):\n- id 1: Friday 2026-11-27 18:10 (in 10 minutes): take the tea out\n- id 2: Saturday 2026-11-28 07:00 (in 13 hours): call Mum',
    );
    assert.equal(text(await tools.callTool('cancel_reminder', { id: '#1' }, { signal })), 'Reminder 1 cancelled.');
    const again = await tools.callTool('cancel_reminder', { id: '1' }, { signal });
    assert.equal(again.isError, true);
    assert.match(text(again), /There is no reminder 1 on this device/);
    assert.equal((await tools.callTool('cancel_reminder', { id: 'tea' }, { signal })).isError, true);
    await tools.callTool('cancel_reminder', { id: '2' }, { signal });
    assert.equal(text(await tools.callTool('list_reminders', {}, { signal })), 'No reminders are set.');
  });

  test('bad arguments and a full device are tool errors saying what to do', async () => {
    const clock = { now: Date.parse('2026-11-27T17:00:00Z') };
    const mine = target(clock, 2);
    const tools = createLocalTools(reminderTools(mine));
    const bad = await tools.callTool('set_reminder', { when: 'in ten minutes', text: 'tea' }, { signal });
    assert.equal(bad.isError, true);
    assert.match(text(bad), /"in ten minutes" is not understood: give a duration from now like PT10M/);
    const past = await tools.callTool('set_reminder', { when: '2026-11-27T09:00', text: 'tea' }, { signal });
    assert.match(text(past), /has already passed: it is now Friday 2026-11-27 18:00 \(Europe\/Berlin\)/);
    assert.match(
      text(await tools.callTool('set_reminder', { when: 'P31D', text: 'tea' }, { signal })),
      /at most 30 days ahead/,
    );
    assert.match(text(await tools.callTool('set_reminder', { when: 'PT1M', text: '  ' }, { signal })), /text is empty/);
    assert.match(text(await tools.callTool('set_reminder', { when: 'PT1M' }, { signal })), /text is required/);
    assert.match(
      text(await tools.callTool('set_reminder', { when: 'PT1M', text: 'x'.repeat(201) }, { signal })),
      /at most 200 characters/,
    );
    assert.deepEqual(mine.rows, [], 'nothing was stored by a refused call');
    await tools.callTool('set_reminder', { when: 'PT1M', text: 'a' }, { signal });
    await tools.callTool('set_reminder', { when: 'PT2M', text: 'b' }, { signal });
    const full = await tools.callTool('set_reminder', { when: 'PT3M', text: 'c' }, { signal });
    assert.equal(full.isError, true);
    assert.match(text(full), /already has 2 reminders, the most it may hold: cancel one first/);
    mine.serverFull = true;
    assert.match(
      text(await tools.callTool('set_reminder', { when: 'PT3M', text: 'c' }, { signal })),
      /The server holds as many reminders as it may/,
    );
  });

  test('delays read as people say them', () => {
    assert.equal(humanDelay(45_000), '45 seconds');
    assert.equal(humanDelay(600_000), '10 minutes');
    assert.equal(humanDelay(5_400_000), '1 hour 30 minutes');
    assert.equal(humanDelay(86_400_000 + 3 * 3_600_000 + 60_000), '1 day 3 hours');
  });
});
