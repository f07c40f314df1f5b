// Building elements without innerHTML: every text from the server (aliases, prompts, ids) is set
// as text, never parsed as markup.

/** `h('button', { class: 'btn', onclick: fn }, 'Bind')`: attributes, `on*` listeners, then children. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'value') el.value = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(typeof c === 'object' ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** `3 min ago`, `just now`, or the date, for an ISO time. */
export function ago(iso) {
  if (!iso) return 'never';
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  if (s < 10) return 'just now';
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86_400) return `${Math.round(s / 3600)} h ago`;
  return new Date(iso).toLocaleDateString();
}

/** The agent picker: the default agent first, then every agent by name. */
export function agentSelect(agents, current, attrs = {}) {
  return h(
    'select',
    attrs,
    h('option', { value: '', selected: !current }, 'default agent'),
    agents.map((a) => h('option', { value: a.name, selected: a.name === current }, a.name)),
  );
}

/** A button that asks once more before acting: the first click arms it for 4 s. */
export function confirmButton(label, confirmLabel, action, attrs = {}) {
  let armed = null;
  const btn = h('button', { type: 'button', class: 'btn danger', ...attrs }, label);
  btn.addEventListener('click', () => {
    if (armed) {
      clearTimeout(armed);
      armed = null;
      btn.textContent = label;
      action();
      return;
    }
    btn.textContent = confirmLabel;
    armed = setTimeout(() => {
      armed = null;
      btn.textContent = label;
    }, 4000);
  });
  return btn;
}

/** Replaces the children of `root`: arrays are flattened, empty values skipped. */
export function fill(root, ...children) {
  root.replaceChildren(...children.flat(2).filter((c) => c !== null && c !== undefined && c !== false));
}

/**
 * A section of a device's card that loads when opened (`load(body)`), and stays open across the
 * console's redraws: `opened` holds the Device-Ids whose section is open.
 */
export function lazySection(title, className, deviceId, opened, load) {
  const body = h('div', { class: `${className}-body` });
  const details = h('details', { class: className, open: opened.has(deviceId) }, h('summary', {}, title), body);
  details.addEventListener('toggle', () => {
    if (details.open) {
      opened.add(deviceId);
      void load(body);
    } else {
      opened.delete(deviceId);
    }
  });
  if (opened.has(deviceId)) void load(body);
  return details;
}
