/**
 * @module Built-in tools over one device's reminders: `set_reminder` (a reminder or timer the
 * device speaks at the time, even when nobody is talking to it), `list_reminders`,
 * `cancel_reminder`. Made per session around that device, so a call reaches only its reminders.
 * The descriptions carry the device's local time and zone, read at each listing, so the model can
 * turn "at half past six" into a date-time; every answer gives the local time a reminder rings.
 */
import type { LocalTool } from '../contract/local-tool.ts';
import { errorResult, textResult } from '../contract/tool-source.ts';
import { formatLocal, type LocalZone } from './local-time.ts';
import { parseWhen } from './reminder-when.ts';

/** A reminder as the tools show it. */
export interface ReminderEntry {
  id: number;
  dueMs: number;
  text: string;
}

/** The device's reminders as the tools act on them. */
export interface ReminderToolTarget {
  /** The device's time zone now (its agent may change). */
  zone(): LocalZone;
  /** Now, ms since the epoch. */
  now(): number;
  readonly maxPerDevice: number;
  readonly maxDaysAhead: number;
  /** Characters of a reminder's text at most. */
  readonly maxChars: number;
  /** `full`: the device holds its most; `store_full`: the server holds its most. */
  add(dueMs: number, text: string): Promise<ReminderEntry | 'full' | 'store_full'>;
  list(): Promise<ReminderEntry[]>;
  cancel(id: number): Promise<boolean>;
}

export const REMINDER_TOOL_NAMES = ['set_reminder', 'list_reminders', 'cancel_reminder'] as const;

/** `1 hour 30 minutes`, `2 days 3 hours`, `45 seconds`: how long until a reminder, to the minute past one minute. */
export function humanDelay(ms: number): string {
  const units: Array<[string, number]> = [
    ['day', 86_400_000],
    ['hour', 3_600_000],
    ['minute', 60_000],
  ];
  if (ms < 60_000) {
    const s = Math.max(1, Math.round(ms / 1000));
    return `${s} second${s === 1 ? '' : 's'}`;
  }
  let rest = Math.round(ms / 60_000) * 60_000;
  const parts: string[] = [];
  for (const [name, size] of units) {
    const n = Math.floor(rest / size);
    rest -= n * size;
    if (n > 0) parts.push(`${n} ${name}${n === 1 ? '' : 's'}`);
  }
  // Days and hours are enough for anything a day or more away.
  return parts.slice(0, 2).join(' ');
}

/** The id as the model may write it: `12`, `#12`, `r12`. */
function parseId(raw: string): number | undefined {
  const m = /^\s*(?:#|r|id\s*)?(\d{1,15})\s*$/i.exec(raw);
  return m ? Number(m[1]) : undefined;
}

export function reminderTools(target: ReminderToolTarget): LocalTool[] {
  const nowLine = (): string => {
    const zone = target.zone();
    return `The user's local time now is ${formatLocal(zone, target.now())} (time zone ${zone.name}).`;
  };
  const line = (r: ReminderEntry, zone: LocalZone, now: number): string =>
    `- id ${r.id}: ${formatLocal(zone, r.dueMs)} (${r.dueMs > now ? `in ${humanDelay(r.dueMs - now)}` : 'ringing now'}): ${r.text}`;
  return [
    {
      name: 'set_reminder',
      // A getter: read at each listing, so the local time in it is current.
      get description(): string {
        return (
          'Set a reminder or a timer: at that time the device says the text aloud ("Reminder: …"), even when nobody is talking to it. ' +
          "`when` is either an ISO-8601 duration from now (PT10M = in ten minutes, PT1H30M, P1D = in a day) or a local date-time in the user's time zone " +
          '(2026-11-27T18:30), optionally with an offset (2026-11-27T18:30+08:00). ' +
          `${nowLine()} At most ${target.maxPerDevice} reminders per device, up to ${target.maxDaysAhead} days ahead. ` +
          'After setting it, tell the user the time it will ring, as the answer gives it.'
        );
      },
      inputSchema: {
        type: 'object',
        properties: {
          when: {
            type: 'string',
            description: 'PT10M, PT1H30M, P1D (from now), or a local date-time such as 2026-11-27T18:30.',
          },
          text: {
            type: 'string',
            description: 'What to say at that time, short, e.g. "take the tea out".',
            maxLength: target.maxChars,
          },
        },
        required: ['when', 'text'],
      },
      async handler(args) {
        const text = typeof args.text === 'string' ? args.text.trim() : '';
        if (text === '') return errorResult('text is empty: say what the reminder is for');
        const zone = target.zone();
        const now = target.now();
        const when = parseWhen(typeof args.when === 'string' ? args.when : '', {
          now,
          zone,
          maxDaysAhead: target.maxDaysAhead,
        });
        if (!when.ok) return errorResult(`${when.error}.`);
        const added = await target.add(when.dueMs, text);
        if (added === 'full')
          return errorResult(
            `This device already has ${target.maxPerDevice} reminders, the most it may hold: cancel one first (list_reminders shows them).`,
          );
        if (added === 'store_full')
          return errorResult('The server holds as many reminders as it may: none can be set now. Tell the user.');
        const local = formatLocal(zone, added.dueMs);
        return {
          ...textResult(
            `Reminder ${added.id} set for ${local} (${zone.name}), in ${humanDelay(added.dueMs - now)}: "${added.text}". Tell the user when it will ring.`,
          ),
          structuredContent: {
            id: String(added.id),
            dueLocal: local,
            timeZone: zone.name,
            dueUtc: new Date(added.dueMs).toISOString(),
            text: added.text,
          },
        };
      },
    },
    {
      name: 'list_reminders',
      get description(): string {
        return `List the reminders and timers set on this device, with their ids and the local times they ring. ${nowLine()}`;
      },
      inputSchema: { type: 'object', properties: {} },
      async handler() {
        const zone = target.zone();
        const now = target.now();
        const all = await target.list();
        if (all.length === 0) return textResult('No reminders are set.');
        return textResult(
          `${all.length} reminder${all.length === 1 ? '' : 's'} (${zone.name}):\n${all.map((r) => line(r, zone, now)).join('\n')}`,
        );
      },
    },
    {
      name: 'cancel_reminder',
      description: 'Cancel one reminder or timer of this device by its id (as set_reminder or list_reminders gave it).',
      inputSchema: {
        type: 'object',
        properties: { id: { type: 'string', description: 'The reminder\'s id, e.g. "12".' } },
        required: ['id'],
      },
      async handler(args) {
        const id = parseId(typeof args.id === 'string' ? args.id : '');
        if (id === undefined) return errorResult('id is not a reminder id: use the number list_reminders gives');
        return (await target.cancel(id))
          ? textResult(`Reminder ${id} cancelled.`)
          : errorResult(`There is no reminder ${id} on this device: list_reminders shows the ones set.`);
      },
    },
  ];
}
