/**
 * @module The reminder tools' target for one session: the talking device's reminders in the store,
 * its time zone from its agent, the configured bounds. A reminder belongs to the session's
 * Device-Id + Client-Id pair: set from it, listed and cancelled there only, and spoken on it (a
 * session with a known MAC and another Client-Id sees none of them).
 */
import type { Logger } from '../../core/logger.ts';
import type { ReminderToolTarget } from '../../mcp/local-tools/reminder-tools.ts';
import { MAX_REMINDER_CHARS, type RemindersStore } from '../../store/reminders.ts';
import type { DeviceLocale } from '../agents/index.ts';

export interface SessionRemindersOptions {
  store: RemindersStore;
  locale: DeviceLocale;
  settings: { maxPerDevice: number; maxDaysAhead: number };
  deviceId: string;
  clientId: string;
  log: Logger;
  /** Wall-clock time, ms since the epoch; default `Date.now`. */
  now?: () => number;
}

export function sessionReminders(o: SessionRemindersOptions): ReminderToolTarget {
  const now = o.now ?? Date.now;
  return {
    zone: () => o.locale.zone(o.deviceId),
    now,
    maxPerDevice: o.settings.maxPerDevice,
    maxDaysAhead: o.settings.maxDaysAhead,
    maxChars: MAX_REMINDER_CHARS,
    async add(dueMs, text) {
      const agent = o.locale.agentOf(o.deviceId);
      const added = await o.store.add(
        { deviceId: o.deviceId, clientId: o.clientId, agent, text, dueMs },
        o.settings.maxPerDevice,
      );
      if (added === 'full' || added === 'store_full') {
        o.log.warn({ max: o.settings.maxPerDevice, why: added }, 'reminders: not set, the most are held');
        return added;
      }
      o.log.info({ id: added.id, due: new Date(dueMs).toISOString(), pii: { text: added.text } }, 'reminders: set');
      return { id: added.id, dueMs: added.dueMs, text: added.text };
    },
    async list() {
      return (await o.store.list(o.deviceId, o.clientId)).map((r) => ({ id: r.id, dueMs: r.dueMs, text: r.text }));
    },
    async cancel(id) {
      const gone = await o.store.cancel(o.deviceId, id, o.clientId);
      if (gone) o.log.info({ id }, 'reminders: cancelled');
      return gone;
    },
  };
}
