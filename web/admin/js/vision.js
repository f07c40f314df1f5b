// The camera on the console: a device's last photo (kept only with vision.keepLast), with the
// question and the model's answer, and a delete; and a line per agent naming the model its photos
// go to. The photo is shown from a data: URL (the CSP allows data: images); texts are set as text.
import { deleteLastPhoto, lastPhoto, visionOverview } from './api.js';
import { ago, confirmButton, fill, h, lazySection } from './dom.js';

/** Device-Ids whose photo section is open: kept open across the console's redraws. */
const opened = new Set();

async function load(body, deviceId, done) {
  fill(body, h('p', { class: 'muted' }, 'Loading…'));
  try {
    const p = await lastPhoto(deviceId);
    const remove = confirmButton(
      'Delete photo',
      'Really delete?',
      async () => {
        try {
          await deleteLastPhoto(deviceId);
          done(`Deleted the kept photo of ${deviceId}.`);
          void load(body, deviceId, done);
        } catch (err) {
          done(err.message, true);
        }
      },
      { class: 'btn danger delete-photo' },
    );
    fill(
      body,
      h('img', {
        class: 'photo',
        src: `data:${p.mime};base64,${p.base64}`,
        alt: `last photo of ${deviceId}`,
        width: String(p.width),
        height: String(p.height),
      }),
      h('p', { class: 'muted' }, `${p.width}×${p.height}, ${Math.round(p.bytes / 1024)} KB · ${ago(p.at)}`),
      h('p', {}, h('span', { class: 'muted' }, 'Asked: '), p.question || '(nothing)'),
      h('p', {}, h('span', { class: 'muted' }, 'Answer: '), p.answer ?? '(none)'),
      h('div', { class: 'row' }, remove),
    );
  } catch (err) {
    const why =
      err.status === 404
        ? 'No photo kept (vision.keepLast is off, or none since the server started).'
        : err.status === 503
          ? 'The camera endpoint is off (vision.enabled).'
          : err.message;
    fill(body, h('p', { class: err.status === 404 || err.status === 503 ? 'empty' : 'error' }, why));
  }
}

/** The camera section of a device's card. `done(message, isError)` reports a change. */
export function photoSection(deviceId, done) {
  return lazySection('Camera', 'photo', deviceId, opened, (body) => load(body, deviceId, done));
}

/** Fills each agent card's `.vision-line` with whether its photos are answered, and by which model. */
export async function showAgentVision(root) {
  let v;
  try {
    v = await visionOverview();
  } catch {
    return;
  }
  for (const line of root.querySelectorAll('.vision-line')) {
    const m = v.agents[line.dataset.agent];
    const text = !v.enabled
      ? 'camera: off'
      : m
        ? `camera: ${m.model} (${m.source === 'chat' ? 'its chat model' : m.source === 'agent' ? 'its own vision model' : 'the configured vision model'})`
        : 'camera: on, but no vision model is set';
    fill(line, text);
  }
}
