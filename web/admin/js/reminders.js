// A device's reminders on its card: the ones waiting to ring (soonest first, in this browser's
// time), loaded when the section is opened, each with a cancel. The texts are the user's words:
// set as text, never parsed as markup.
import { cancelDeviceReminder, deviceReminders } from './api.js';
import { confirmButton, fill, h, lazySection } from './dom.js';

/** Device-Ids whose reminders section is open: kept open across the console's redraws. */
const opened = new Set();

const when = (iso) =>
  new Date(iso).toLocaleString(undefined, {
    weekday: 'short',
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
  });

async function load(body, deviceId, done) {
  fill(body, h('p', { class: 'muted' }, 'Loading…'));
  try {
    const { reminders } = await deviceReminders(deviceId);
    const item = (r) => {
      const cancel = confirmButton(
        'Cancel',
        'Really cancel?',
        async () => {
          try {
            await cancelDeviceReminder(deviceId, r.id);
            done(`Cancelled the reminder "${r.text}".`);
            void load(body, deviceId, done);
          } catch (err) {
            done(err.message, true);
          }
        },
        { class: 'btn danger cancel-reminder' },
      );
      return h(
        'li',
        { 'data-id': String(r.id) },
        h('span', { class: 'muted' }, `${when(r.dueAt)}: `),
        r.text,
        ' ',
        cancel,
      );
    };
    fill(
      body,
      reminders.length === 0
        ? h('p', { class: 'empty' }, 'No reminders.')
        : h('ul', { class: 'reminders-list' }, reminders.map(item)),
    );
  } catch (err) {
    fill(body, h('p', { class: 'error' }, err.message));
  }
}

/** The reminders section of a device's card. `done(message, isError)` reports a change. */
export function remindersSection(deviceId, done) {
  return lazySection('Reminders', 'reminders', deviceId, opened, (body) => load(body, deviceId, done));
}
