// A device's memory on its card: its stored turns (every agent), the facts it remembers and its
// summaries, loaded when the section is opened, and a delete of all of it. Every text is the
// user's or the model's words: set as text, never parsed as markup.
import { deleteDeviceMemory, deviceHistory, deviceMemory } from './api.js';
import { ago, confirmButton, fill, h, lazySection } from './dom.js';

/** Device-Ids whose memory section is open: kept open across the console's redraws. */
const opened = new Set();

async function load(body, deviceId, done) {
  fill(body, h('p', { class: 'muted' }, 'Loading…'));
  try {
    const [history, memory] = await Promise.all([deviceHistory(deviceId), deviceMemory(deviceId)]);
    const empty = history.turns.length === 0 && memory.facts.length === 0 && memory.summaries.length === 0;
    const remove = confirmButton('Delete memory', 'Really delete?', async () => {
      try {
        await deleteDeviceMemory(deviceId);
        done(`Deleted the memory of ${deviceId}.`);
        void load(body, deviceId, done);
      } catch (err) {
        done(err.message, true);
      }
    }, { class: 'btn danger delete-memory' });
    fill(body,
      empty ? h('p', { class: 'empty' }, 'Nothing remembered.') : null,
      memory.facts.length > 0 ? [h('h4', {}, 'Facts'), h('ul', { class: 'facts-list' }, memory.facts.map((f) => h('li', {}, f.text, h('span', { class: 'muted' }, ` · ${f.agent}`))))] : null,
      memory.summaries.map((s) => [h('h4', {}, `Summary (${s.agent})`), h('p', { class: 'summary' }, s.text)]),
      history.turns.length > 0
        ? [h('h4', {}, 'Recent turns'), h('ol', { class: 'turns' }, history.turns.slice(-30).map((t) => h('li', { 'data-role': t.role }, h('span', { class: 'muted' }, `${t.role} · ${t.agent} · ${ago(t.createdAt)}: `), t.text)))]
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
