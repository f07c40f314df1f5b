// A device's memory on its card: its stored turns (every agent), the facts it remembers and its
// summaries, loaded when the section is opened; which identity pairs (Client-Ids of the MAC) hold
// memory, with a move of another pair's memory to the device's current pair (a re-flashed device
// gets a new Client-Id, and starts empty until then); and a delete of all of it. Every text is the
// user's or the model's words (and a Client-Id is the device's): set as text, never parsed as markup.
import { deleteDeviceMemory, deviceHistory, deviceMemory, moveDeviceMemory } from './api.js';
import { ago, confirmButton, fill, h, lazySection } from './dom.js';

/** Device-Ids whose memory section is open: kept open across the console's redraws. */
const opened = new Set();

/** A pair's name on the card. */
const pairName = (clientId) =>
  clientId === null ? 'unassigned (kept from before memory was per Client-Id)' : clientId;

/** The pairs holding memory, each but the current one with a move to the current pair. */
function pairs(deviceId, memory, reload, done) {
  const current = memory.currentClientId;
  return [
    h('h4', {}, 'Client-Ids holding memory'),
    h(
      'ul',
      { class: 'pairs-list' },
      memory.clients.map((c) =>
        h(
          'li',
          { 'data-client': c.clientId ?? '' },
          h('span', { class: 'client-id' }, pairName(c.clientId)),
          h(
            'span',
            { class: 'muted' },
            ` · ${c.turns} turns, ${c.facts} facts${c.lastAt ? ` · ${ago(c.lastAt)}` : ''}${c.clientId === current ? ' · current' : ''}`,
          ),
          current && c.clientId !== current
            ? confirmButton(
                'Move to current',
                'Really move?',
                async () => {
                  try {
                    await moveDeviceMemory(deviceId, c.clientId, current);
                    done(`Moved the memory of ${pairName(c.clientId)} to ${current}.`);
                    reload();
                  } catch (err) {
                    done(err.message, true);
                  }
                },
                { class: 'btn move-memory' },
              )
            : null,
        ),
      ),
    ),
  ];
}

async function load(body, deviceId, done) {
  fill(body, h('p', { class: 'muted' }, 'Loading…'));
  const reload = () => void load(body, deviceId, done);
  try {
    const [history, memory] = await Promise.all([deviceHistory(deviceId), deviceMemory(deviceId)]);
    const empty = history.turns.length === 0 && memory.facts.length === 0 && memory.summaries.length === 0;
    // Which pair a row belongs to is worth showing only when there is more than one.
    const of = (clientId) => (memory.clients.length > 1 ? ` · ${pairName(clientId)}` : '');
    const remove = confirmButton(
      'Delete memory',
      'Really delete?',
      async () => {
        try {
          await deleteDeviceMemory(deviceId);
          done(`Deleted the memory of ${deviceId}.`);
          reload();
        } catch (err) {
          done(err.message, true);
        }
      },
      { class: 'btn danger delete-memory' },
    );
    fill(
      body,
      empty ? h('p', { class: 'empty' }, 'Nothing remembered.') : null,
      memory.clients.length > 1 ||
        (memory.clients.length === 1 && memory.clients[0].clientId !== memory.currentClientId)
        ? pairs(deviceId, memory, reload, done)
        : null,
      memory.facts.length > 0
        ? [
            h('h4', {}, 'Facts'),
            h(
              'ul',
              { class: 'facts-list' },
              memory.facts.map((f) =>
                h('li', {}, f.text, h('span', { class: 'muted' }, ` · ${f.agent}${of(f.clientId)}`)),
              ),
            ),
          ]
        : null,
      memory.summaries.map((s) => [
        h('h4', {}, `Summary (${s.agent}${of(s.clientId)})`),
        h('p', { class: 'summary' }, s.text),
      ]),
      history.turns.length > 0
        ? [
            h('h4', {}, 'Recent turns'),
            h(
              'ol',
              { class: 'turns' },
              history.turns
                .slice(-30)
                .map((t) =>
                  h(
                    'li',
                    { 'data-role': t.role },
                    h('span', { class: 'muted' }, `${t.role} · ${t.agent}${of(t.clientId)} · ${ago(t.createdAt)}: `),
                    t.text,
                  ),
                ),
            ),
          ]
        : null,
      empty ? null : h('div', { class: 'row' }, remove),
    );
  } catch (err) {
    fill(body, h('p', { class: 'error' }, err.message));
  }
}

/** The memory section of a device's card. `done(message, isError)` reports a change. */
export function memorySection(deviceId, done) {
  return lazySection('Memory', 'memory', deviceId, opened, (body) => load(body, deviceId, done));
}
