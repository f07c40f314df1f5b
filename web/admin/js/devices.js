// The pending and devices tabs: pending devices with the code they speak and a one-click bind to a
// chosen agent; bound devices renamed, moved to another agent or revoked, and what each remembers.
import { bindDevice, revokeDevice, sayOnDevice, updateDevice } from './api.js';
import { agentSelect, ago, confirmButton, fill, h } from './dom.js';
import { memorySection } from './memory.js';
import { photoSection } from './vision.js';
import { remindersSection } from './reminders.js';

/** `123456` → `123 456`, as it is read out. */
const spoken = (code) => `${code.slice(0, 3)} ${code.slice(3)}`;

function facts(d) {
  return h(
    'p',
    { class: 'facts' },
    h('span', { class: 'mono' }, d.deviceId),
    d.board ? ` · ${d.board}` : '',
    d.firmware ? ` · v${d.firmware}` : '',
    ` · seen ${ago(d.lastSeen)}`,
  );
}

/** The pending tab. `done(message)` refreshes the console after a change. */
export function renderPending(root, devices, agents, done) {
  const pending = devices.filter((d) => d.state === 'pending');
  fill(
    root,
    h('h2', {}, 'Pending devices'),
    pending.length === 0
      ? h(
          'p',
          { class: 'empty' },
          'No device is waiting. A new device speaks a 6-digit code after it starts; it appears here.',
        )
      : pending.map((d) => {
          const agent = agentSelect(agents, null, { 'aria-label': 'Agent', class: 'agent' });
          const alias = h('input', {
            type: 'text',
            placeholder: 'Name (optional)',
            'aria-label': 'Name',
            maxlength: 64,
            class: 'alias',
          });
          const bind = h('button', { type: 'button', class: 'btn primary bind' }, 'Bind');
          bind.addEventListener('click', async () => {
            bind.disabled = true;
            try {
              await bindDevice(d.code, agent.value, alias.value.trim());
              done(`Bound ${alias.value.trim() || d.deviceId}${agent.value ? ` to ${agent.value}` : ''}.`);
            } catch (err) {
              bind.disabled = false;
              done(err.message, true);
            }
          });
          return h(
            'article',
            { class: 'card device pending', 'data-device': d.deviceId },
            h('p', { class: 'code', title: 'The code the device speaks' }, spoken(d.code)),
            facts(d),
            h('div', { class: 'row' }, agent, alias, bind),
          );
        }),
  );
}

/** The devices tab: every bound (and seen) device. */
export function renderDevices(root, devices, agents, done) {
  const shown = devices.filter((d) => d.state !== 'pending');
  fill(
    root,
    h('h2', {}, 'Devices'),
    shown.length === 0
      ? h('p', { class: 'empty' }, 'No devices yet.')
      : shown.map((d) => {
          const alias = h('input', {
            type: 'text',
            value: d.alias ?? '',
            placeholder: 'Name',
            'aria-label': 'Name',
            maxlength: 64,
            class: 'alias',
          });
          const save = h('button', { type: 'button', class: 'btn rename' }, 'Rename');
          save.addEventListener('click', async () => {
            try {
              await updateDevice(d.deviceId, { alias: alias.value.trim() || null });
              done(`Renamed ${d.deviceId}.`);
            } catch (err) {
              done(err.message, true);
            }
          });
          const agent = agentSelect(agents, d.agent, { 'aria-label': 'Agent', class: 'agent' });
          agent.addEventListener('change', async () => {
            try {
              await updateDevice(d.deviceId, { agent: agent.value || null });
              done(`${d.alias ?? d.deviceId} now uses ${agent.value || 'the default agent'}.`);
            } catch (err) {
              done(err.message, true);
            }
          });
          const revoke =
            d.state === 'bound'
              ? confirmButton(
                  'Revoke',
                  'Really revoke?',
                  async () => {
                    try {
                      await revokeDevice(d.deviceId);
                      done(`Revoked ${d.alias ?? d.deviceId}.`);
                    } catch (err) {
                      done(err.message, true);
                    }
                  },
                  { class: 'btn danger revoke' },
                )
              : h('span', { class: 'muted' }, 'not bound');
          const text = h('input', {
            type: 'text',
            placeholder: 'Something to say',
            'aria-label': 'Text to say',
            maxlength: 500,
            class: 'say-text',
          });
          const sayBtn = h('button', { type: 'button', class: 'btn say' }, 'Say');
          sayBtn.addEventListener('click', async () => {
            if (!text.value.trim()) return;
            try {
              const o = await sayOnDevice(d.deviceId, text.value.trim());
              const name = d.alias ?? d.deviceId;
              const told = {
                spoken: `${name} is saying it now.`,
                after_turn: `${name} says it after its current answer.`,
                notified: `${name} was sent it (audio).`,
                alerted: `${name} shows it on its screen.`,
                queued: `${name} is offline: it hears it when it connects.`,
              }[o.status];
              if (told) {
                text.value = '';
                done(told);
              } else {
                done(
                  `Not said: ${o.reason === 'offline' ? `${name} is offline` : o.reason === 'rate_limited' ? 'too many messages, try again later' : o.reason}.`,
                  true,
                );
              }
            } catch (err) {
              done(err.message, true);
            }
          });
          return h(
            'article',
            { class: 'card device', 'data-device': d.deviceId, 'data-state': d.state },
            h(
              'h3',
              {},
              h('span', {
                class: `dot ${d.online ? 'on' : 'off'}`,
                title: d.online ? 'online' : 'offline',
                'aria-label': d.online ? 'online' : 'offline',
              }),
              d.alias ?? d.deviceId,
            ),
            facts(d),
            h('div', { class: 'row' }, h('label', { class: 'inline' }, 'Agent ', agent)),
            h('div', { class: 'row' }, alias, save, revoke),
            h('div', { class: 'row' }, text, sayBtn),
            memorySection(d.deviceId, done),
            remindersSection(d.deviceId, done),
            photoSection(d.deviceId, done),
          );
        }),
  );
}
