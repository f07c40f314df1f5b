// The online tab: every session open now, on every replica.
import { ago, fill, h } from './dom.js';

export function renderOnline(root, sessions, devices) {
  const alias = new Map(devices.map((d) => [d.deviceId, d.alias]));
  fill(
    root,
    h('h2', {}, 'Online now'),
    sessions.length === 0
      ? h('p', { class: 'empty' }, 'Nobody is connected.')
      : h(
          'ul',
          { class: 'list' },
          sessions.map((s) =>
            h(
              'li',
              { class: 'card session', 'data-device': s.deviceId ?? '' },
              h(
                'h3',
                {},
                h('span', { class: 'dot on' }),
                (s.deviceId && alias.get(s.deviceId)) || s.deviceId || 'unknown device',
              ),
              h(
                'p',
                { class: 'facts' },
                `agent ${s.agent ?? 'default'} · replica ${s.replica} · since ${ago(s.since)}`,
              ),
            ),
          ),
        ),
  );
}
