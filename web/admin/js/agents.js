// The agents tab: every agent with its prompt, language, voice and model, a form to create one
// and to edit one. API keys are write-only: the form shows whether one is set, never its value.
// The voice: the embedded and OpenAI-compatible ones have fields of their own; any other provider
// the server knows is edited as its `tts` block in JSON (the server validates it).
import { showAgentVision } from './vision.js';
import { createAgent, deleteAgent, updateAgent } from './api.js';
import { confirmButton, fill, h } from './dom.js';
import { endpointPanel } from './mcp-endpoint.js';

/** Text-like settings: `path` in the settings, its label, the input kind. */
const FIELDS = [
  { path: ['systemPrompt'], label: 'Prompt (the role)', kind: 'textarea' },
  {
    path: ['language'],
    label: 'Language',
    kind: 'select',
    options: [
      ['', 'server default'],
      ['en', 'English'],
      ['zh', 'Chinese'],
    ],
  },
  { path: ['greeting'], label: 'Greeting', kind: 'text' },
  { path: ['timeZone'], label: 'Time zone (e.g. Europe/Berlin)', kind: 'text' },
  { path: ['llm', 'model'], label: 'Model', kind: 'text' },
  { path: ['llm', 'baseURL'], label: 'Model base URL', kind: 'url' },
  { path: ['llm', 'temperature'], label: 'Temperature (0–2)', kind: 'number' },
];

const get = (obj, path) => path.reduce((o, k) => (o && typeof o === 'object' ? o[k] : undefined), obj);
const fieldName = (path) => path.join('-');

function input(field, value) {
  const attrs = {
    name: fieldName(field.path),
    id: `f-${fieldName(field.path)}-${Math.random().toString(36).slice(2, 8)}`,
  };
  let el;
  if (field.kind === 'textarea') el = h('textarea', { ...attrs, rows: 5 }, value ?? '');
  else if (field.kind === 'select')
    el = h(
      'select',
      attrs,
      field.options.map(([v, label]) => h('option', { value: v, selected: (value ?? '') === v }, label)),
    );
  else
    el = h('input', {
      ...attrs,
      type: field.kind === 'number' ? 'number' : field.kind,
      step: field.kind === 'number' ? '0.1' : undefined,
      min: field.kind === 'number' ? 0 : undefined,
      max: field.kind === 'number' ? 2 : undefined,
      value: value ?? '',
    });
  return h('label', { for: attrs.id, class: 'field' }, field.label, el);
}

function readValue(form, field) {
  const el = form.elements.namedItem(fieldName(field.path));
  const raw = el.value.trim();
  if (raw === '') return undefined;
  return field.kind === 'number' ? Number(raw) : raw;
}

/** Sets `value` (or null to remove what is stored) at `path` in `patch`, creating the `llm` block. */
function put(patch, path, value) {
  if (path.length === 1) patch[path[0]] = value;
  else (patch[path[0]] ??= {})[path[1]] = value;
}

/** Providers with fields of their own in the form; any other is edited as JSON. */
const FORM_PROVIDERS = ['espeak', 'openai'];

/** The `tts` block typed as JSON: an object naming its provider. */
function ttsFromJson(text) {
  let tts;
  try {
    tts = JSON.parse(text);
  } catch (err) {
    throw new Error(`Voice settings are not valid JSON: ${err.message}`);
  }
  if (typeof tts !== 'object' || tts === null || Array.isArray(tts) || typeof tts.provider !== 'string')
    throw new Error('Voice settings must be a JSON object with a "provider".');
  return tts;
}

/** The form's changes as a settings patch against `current` (an agent's settings, or {} when creating). */
function settingsPatch(form, current, keySet) {
  const patch = {};
  for (const f of FIELDS) {
    const v = readValue(form, f);
    if (v !== undefined && v !== get(current, f.path)) put(patch, f.path, v);
    else if (v === undefined && get(current, f.path) !== undefined) put(patch, f.path, null);
  }
  const key = form.elements.namedItem('llm-apiKey').value;
  if (key) put(patch, ['llm', 'apiKey'], key);
  else if (keySet && form.elements.namedItem('llm-apiKey-remove')?.checked) put(patch, ['llm', 'apiKey'], null);
  if (form.dataset.voiceChanged === 'yes') {
    const provider = form.elements.namedItem('tts-provider').value;
    const voice = form.elements.namedItem('tts-voice').value.trim();
    if (!provider) patch.tts = current.tts ? null : undefined;
    else if (provider === 'other') patch.tts = ttsFromJson(form.elements.namedItem('tts-json').value);
    else {
      const tts = { provider, ...(voice ? { voice } : {}) };
      if (provider === 'openai') {
        tts.baseURL = form.elements.namedItem('tts-baseURL').value.trim();
        const model = form.elements.namedItem('tts-model').value.trim();
        const ttsKey = form.elements.namedItem('tts-apiKey').value;
        if (model) tts.model = model;
        if (ttsKey) tts.apiKey = ttsKey;
      }
      patch.tts = tts;
    }
  }
  return patch;
}

/** For a new agent: the patch without removals. */
function withoutNulls(obj) {
  const out = {};
  for (const [k, v] of Object.entries(obj)) {
    if (v === null || v === undefined) continue;
    out[k] = typeof v === 'object' && !Array.isArray(v) ? withoutNulls(v) : v;
  }
  return out;
}

function voiceFields(tts, ttsKeySet) {
  const stored = tts?.provider ?? '';
  const provider = stored && !FORM_PROVIDERS.includes(stored) ? 'other' : stored;
  const openai = h(
    'div',
    { class: 'openai-tts', hidden: provider !== 'openai' },
    h(
      'label',
      { class: 'field' },
      'Voice base URL',
      h('input', { name: 'tts-baseURL', type: 'url', value: tts?.baseURL ?? '' }),
    ),
    h(
      'label',
      { class: 'field' },
      'Voice model',
      h('input', { name: 'tts-model', type: 'text', value: tts?.model ?? '' }),
    ),
    h(
      'label',
      { class: 'field' },
      'Voice API key',
      h('input', {
        name: 'tts-apiKey',
        type: 'password',
        autocomplete: 'off',
        placeholder: ttsKeySet ? 'set: leave empty to keep' : 'not set',
      }),
    ),
  );
  const other = h(
    'div',
    { class: 'other-tts', hidden: provider !== 'other' },
    h(
      'label',
      { class: 'field' },
      'Voice settings (JSON: the provider and its options, see docs/tts.md)',
      h(
        'textarea',
        {
          name: 'tts-json',
          rows: 6,
          placeholder: '{ "provider": "…", "voice": "…" }',
        },
        provider === 'other' ? JSON.stringify(tts, null, 2) : '',
      ),
    ),
    h(
      'p',
      { class: 'muted' },
      ttsKeySet
        ? 'Keys and tokens are set and never shown: leave them out to keep them.'
        : 'Keys and tokens are never shown once saved.',
    ),
  );
  const select = h(
    'select',
    { name: 'tts-provider' },
    [
      ['', 'server default'],
      ['espeak', 'embedded (espeak-ng)'],
      ['openai', 'OpenAI-compatible'],
      ['other', 'another provider (JSON)'],
    ].map(([v, label]) => h('option', { value: v, selected: provider === v }, label)),
  );
  const voiceName = h(
    'label',
    { class: 'field', hidden: provider === 'other' },
    'Voice name',
    h('input', {
      name: 'tts-voice',
      type: 'text',
      value: tts?.voice ?? '',
      placeholder: 'en-us, cmn-latn-pinyin, alloy…',
    }),
  );
  select.addEventListener('change', () => {
    openai.hidden = select.value !== 'openai';
    other.hidden = select.value !== 'other';
    voiceName.hidden = select.value === 'other';
  });
  return h(
    'fieldset',
    { class: 'voice' },
    h('legend', {}, 'Voice'),
    h('label', { class: 'field' }, 'Speech provider', select),
    voiceName,
    openai,
    other,
  );
}

/** The form for a new agent (`agent` undefined) or an existing one. */
function agentForm(agent, done) {
  const settings = agent?.settings ?? {};
  const form = h(
    'form',
    { class: 'agent-form' },
    agent
      ? null
      : h(
          'label',
          { class: 'field' },
          'Name',
          h('input', {
            name: 'name',
            type: 'text',
            required: true,
            pattern: '[A-Za-z0-9][A-Za-z0-9_.\\-]*',
            maxlength: 64,
            placeholder: 'kitchen',
          }),
        ),
    FIELDS.map((f) => input(f, get(settings, f.path))),
    h(
      'label',
      { class: 'field' },
      'Model API key',
      h('input', {
        name: 'llm-apiKey',
        type: 'password',
        autocomplete: 'off',
        placeholder: agent?.apiKeySet ? 'set: leave empty to keep' : 'not set',
      }),
    ),
    agent?.apiKeySet
      ? h(
          'label',
          { class: 'check' },
          h('input', { type: 'checkbox', name: 'llm-apiKey-remove' }),
          ' remove the stored key',
        )
      : null,
    voiceFields(settings.tts, agent?.ttsApiKeySet),
    h('div', { class: 'row' }, h('button', { type: 'submit', class: 'btn primary' }, agent ? 'Save' : 'Create agent')),
  );
  form.addEventListener('input', (e) => {
    if (String(e.target.name ?? '').startsWith('tts-')) form.dataset.voiceChanged = 'yes';
  });
  form.addEventListener('change', (e) => {
    if (String(e.target.name ?? '').startsWith('tts-')) form.dataset.voiceChanged = 'yes';
  });
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    try {
      const patch = settingsPatch(form, settings, agent?.apiKeySet);
      if (agent) {
        await updateAgent(agent.name, patch);
        done(`Saved ${agent.name}.`);
      } else {
        const name = form.elements.namedItem('name').value.trim();
        await createAgent(name, withoutNulls(patch));
        done(`Created ${name}.`);
      }
    } catch (err) {
      done(err.message, true);
    }
  });
  return form;
}

function summary(a) {
  const s = a.settings;
  const bits = [
    s.language ?? 'default language',
    s.llm?.model ?? 'default model',
    s.tts ? `voice: ${[s.tts.provider, s.tts.voice].filter(Boolean).join(' ')}` : 'default voice',
    a.apiKeySet ? 'key set' : null,
  ].filter(Boolean);
  return h('p', { class: 'facts' }, bits.join(' · '));
}

export function renderAgents(root, agents, done) {
  const create = h('details', { class: 'card create' }, h('summary', {}, 'New agent'), agentForm(undefined, done));
  fill(
    root,
    h('h2', {}, 'Agents'),
    h('p', { class: 'muted' }, "What an agent leaves empty comes from the server's configuration (the default agent)."),
    create,
    agents.map((a) =>
      h(
        'details',
        { class: 'card agent', 'data-agent': a.name },
        h(
          'summary',
          {},
          h('strong', {}, a.name),
          summary(a),
          h('p', { class: 'facts vision-line', 'data-agent': a.name }),
        ),
        agentForm(a, done),
        endpointPanel(a.name, done),
        h(
          'div',
          { class: 'row end' },
          confirmButton('Delete agent', 'Really delete?', async () => {
            try {
              await deleteAgent(a.name);
              done(`Deleted ${a.name}; its devices use the default agent.`);
            } catch (err) {
              done(err.message, true);
            }
          }),
        ),
      ),
    ),
  );
  void showAgentVision(root);
}
