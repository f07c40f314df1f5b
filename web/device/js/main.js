/**
 * Page wiring: builds the device, player and demo tools, binds the controls and renders what the
 * device reports. URL parameters (for developers and tests): `codec=webcodecs|wasm`,
 * `mcpPageBytes=N` (tools/list page budget), `processing=0` (raw microphone), `mode=auto|manual|realtime`.
 * `window.__xiaozhi` exposes state and counters for automated tests.
 */
import { Device } from './device.js';
import { Player } from './player.js';
import { demoTools } from './demo-tools.js';
import { loadIdentity, loadSetting, saveSetting } from './identity.js';

const $ = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));
const params = new URLSearchParams(location.search);

const player = new Player();
player.setVolume(Number(loadSetting('volume', '70')));
const identity = loadIdentity();

const volumeInput = /** @type {HTMLInputElement} */ ($('volume'));
const volumeOut = $('volume-value');
/** @param {number} v */
function setVolume(v) {
  player.setVolume(v);
  volumeInput.value = String(player.volume);
  volumeOut.textContent = String(player.volume);
  saveSetting('volume', String(player.volume));
}

/** @param {'light'|'dark'} t */
function setTheme(t) {
  document.documentElement.dataset.theme = t;
}

let noticeTimer = 0;
/** @param {string} text */
function showNotice(text) {
  const n = $('notice');
  n.textContent = text;
  n.hidden = false;
  clearTimeout(noticeTimer);
  noticeTimer = window.setTimeout(() => (n.hidden = true), 8000);
}

const codecParam = params.get('codec');
const pageBytes = Number(params.get('mcpPageBytes'));
const device = new Device({
  player,
  identity,
  codec: codecParam === 'wasm' || codecParam === 'webcodecs' ? codecParam : 'auto',
  ...(pageBytes > 0 ? { mcpPageBytes: pageBytes } : {}),
  tools: demoTools({
    getVolume: () => player.volume,
    setVolume,
    getTheme: () => document.documentElement.dataset.theme ?? 'light',
    setTheme,
    showNotice,
    systemInfo: () => ({
      user_agent: navigator.userAgent,
      codec: device.codec,
      device_id: identity.deviceId,
      client_id: identity.clientId,
    }),
  }),
});
device.otaUrl = loadSetting('otaUrl', device.otaUrl);
device.token = loadSetting('token', '');
device.mic.processing = params.get('processing') === '0' ? false : loadSetting('processing', '1') === '1';

// ---- rendering ------------------------------------------------------------------------------

const chat = $('chat');
const EMOJI = /** @type {Record<string, string>} */ ({
  neutral: '😶',
  happy: '🙂',
  laughing: '😆',
  funny: '😂',
  sad: '😔',
  angry: '😠',
  crying: '😭',
  loving: '😍',
  embarrassed: '😳',
  surprised: '😯',
  shocked: '😱',
  thinking: '🤔',
  winking: '😉',
  cool: '😎',
  relaxed: '😌',
  delicious: '🤤',
  kissy: '😘',
  confident: '😏',
  sleepy: '😴',
  silly: '😜',
  confused: '🙄',
});

/** @param {import('./device.js').LogEntry} e */
function addEntry(e) {
  const li = document.createElement('li');
  li.className = `msg ${e.kind}`;
  li.dataset.kind = e.kind;
  const text = document.createElement('span');
  text.className = 'text';
  text.textContent = e.text;
  li.append(text);
  if (e.detail) {
    const d = document.createElement('span');
    d.className = 'detail';
    d.textContent = e.detail;
    li.append(d);
  }
  chat.append(li);
  while (chat.children.length > 200) chat.firstElementChild?.remove();
  chat.scrollTop = chat.scrollHeight;
}

const STATE_LABEL = {
  offline: 'offline',
  connecting: 'connecting…',
  idle: 'connected',
  listening: 'listening',
  speaking: 'speaking',
};

function renderControls() {
  const s = device.state;
  const online = s !== 'offline' && s !== 'connecting';
  const st = $('state');
  st.textContent = STATE_LABEL[s];
  st.dataset.state = s;
  const connect = /** @type {HTMLButtonElement} */ ($('connect'));
  connect.textContent = s === 'offline' ? 'Connect' : 'Disconnect';
  connect.disabled = s === 'connecting';
  for (const id of ['talk', 'text', 'send']) /** @type {HTMLButtonElement} */ ($(id)).disabled = !online;
  /** @type {HTMLButtonElement} */ ($('abort')).disabled = !online || s !== 'speaking';
  const talking = device.mode === 'manual' ? device.sending : device.callActive;
  $('talk').classList.toggle('active', talking);
  $('talk-label').textContent =
    device.mode === 'manual'
      ? talking
        ? 'Release to send'
        : 'Hold to talk'
      : talking
        ? 'Stop talking'
        : 'Start talking';
}

/** @param {import('./device.js').Turn} t */
function renderTurn(t) {
  const parts = [];
  if (t.endToFirstAudioMs !== undefined) parts.push(`<b>${t.endToFirstAudioMs} ms</b> end of speech → first audio`);
  else parts.push('waiting for audio…');
  if (t.endToSttMs !== undefined) parts.push(`${t.endToSttMs} ms to text`);
  if (t.sttToFirstAudioMs !== undefined) parts.push(`${t.sttToFirstAudioMs} ms text → audio`);
  const el = $('timing');
  el.innerHTML = `${parts[0]}<br><small>${t.source === 'text' ? 'typed' : 'spoken'} turn #${t.id}${parts.length > 1 ? ` · ${parts.slice(1).join(' · ')}` : ''}</small>`;
  el.dataset.ms = t.endToFirstAudioMs === undefined ? '' : String(t.endToFirstAudioMs);
}

function renderStats() {
  const s = { ...player.stats, sent: device.stats.sent, dropped: player.stats.dropped + device.stats.dropped };
  for (const dd of /** @type {NodeListOf<HTMLElement>} */ (document.querySelectorAll('[data-stat]'))) {
    const k = /** @type {keyof typeof s} */ (dd.dataset.stat);
    dd.textContent = k === 'dropped' ? `${s.dropped} / ${player.stats.underruns}` : String(s[k]);
  }
}

function renderTools() {
  const ul = $('tools-list');
  ul.replaceChildren(
    ...device.mcp.tools.map((t) => {
      const li = document.createElement('li');
      const code = document.createElement('code');
      code.textContent = t.name;
      li.append(code);
      if (t.userOnly) li.append(' (user only)');
      return li;
    }),
  );
}

device.subscribe((type, detail) => {
  switch (type) {
    case 'log':
      addEntry(/** @type {any} */ (detail));
      break;
    case 'state':
    case 'talk':
    case 'mode':
    case 'abort':
      renderControls();
      break;
    case 'session': {
      const d = /** @type {any} */ (detail);
      $('session-id').textContent = d?.sessionId || '–';
      $('audio-params').textContent = d
        ? `${d.audioParams.format} ${d.audioParams.sample_rate / 1000} kHz, ${d.audioParams.channels} ch, ${d.audioParams.frame_duration} ms`
        : '–';
      $('codec').textContent = d ? (d.codec === 'webcodecs' ? 'WebCodecs Opus' : 'Opus WASM (opusscript)') : '–';
      if (d) addEntry({ kind: 'system', text: `Connected · session ${d.sessionId.slice(0, 8)}…` });
      break;
    }
    case 'activation': {
      // activation mode: this page is a new device; the owner binds it with the code shown. The
      // server's message names the command that works where it runs (sources or the image).
      const a = /** @type {{ code: string, message: string } | null} */ (detail);
      const el = $('activation');
      el.hidden = !a;
      el.textContent = a ? a.message || `Activation code ${a.code}.` : '';
      if (a) addEntry({ kind: 'system', text: `Waiting for activation: code ${a.code}` });
      break;
    }
    case 'turn':
      renderTurn(/** @type {any} */ (detail));
      break;
    case 'emotion': {
      const e = String(detail);
      const face = $('face');
      face.textContent = `${EMOJI[e] ?? ''} ${e}`.trim();
      face.hidden = false;
      break;
    }
    case 'mcp': {
      const s = device.mcp.stats;
      $('mcp-status').textContent = `initialize ×${s.initialize}, tools/list pages ×${s.listPages}, calls ×${s.calls}`;
      break;
    }
    case 'level': {
      const d = /** @type {{ db: number, speech: boolean }} */ (detail);
      const level = Math.max(0, Math.min(1, (d.db + 70) / 60));
      $('meter').style.setProperty('--level', device.sending ? String(level) : '0');
      break;
    }
  }
});
setInterval(renderStats, 250);

// ---- controls -------------------------------------------------------------------------------

$('connect').addEventListener('click', () => {
  if (device.state === 'offline') void device.connect();
  else device.disconnect();
});

const talk = $('talk');
talk.addEventListener('pointerdown', (e) => {
  if (device.mode !== 'manual') return;
  talk.setPointerCapture(e.pointerId);
  void device.startTalk().then(renderControls);
});
for (const ev of ['pointerup', 'pointercancel']) {
  talk.addEventListener(ev, () => {
    if (device.mode === 'manual' && device.sending) device.endTalk();
  });
}
talk.addEventListener('click', () => {
  if (device.mode === 'manual') return;
  if (device.callActive) device.endTalk();
  else void device.startTalk().then(renderControls);
});
talk.addEventListener('keydown', (e) => {
  if (device.mode !== 'manual' || e.repeat || (e.key !== ' ' && e.key !== 'Enter')) return;
  e.preventDefault();
  void device.startTalk().then(renderControls);
});
talk.addEventListener('keyup', (e) => {
  if (device.mode === 'manual' && (e.key === ' ' || e.key === 'Enter') && device.sending) device.endTalk();
});

$('abort').addEventListener('click', () => device.abort());

$('text-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const input = /** @type {HTMLInputElement} */ ($('text'));
  if (device.sendText(input.value)) input.value = '';
});

volumeInput.addEventListener('input', () => setVolume(Number(volumeInput.value)));

for (const r of /** @type {NodeListOf<HTMLInputElement>} */ (document.querySelectorAll('input[name="mode"]'))) {
  r.addEventListener('change', () => {
    if (r.checked) device.setMode(/** @type {any} */ (r.value));
  });
}
const initialMode = params.get('mode');
if (initialMode === 'manual' || initialMode === 'realtime' || initialMode === 'auto') {
  device.setMode(initialMode);
  const r = /** @type {HTMLInputElement | null} */ (
    document.querySelector(`input[name="mode"][value="${initialMode}"]`)
  );
  if (r) r.checked = true;
}

const otaInput = /** @type {HTMLInputElement} */ ($('ota-url'));
otaInput.value = device.otaUrl;
otaInput.addEventListener('change', () => {
  device.otaUrl = otaInput.value.trim() || new URL('/xiaozhi/ota/', location.href).href;
  saveSetting('otaUrl', device.otaUrl);
});
const tokenInput = /** @type {HTMLInputElement} */ ($('token'));
tokenInput.value = device.token;
tokenInput.addEventListener('change', () => {
  device.token = tokenInput.value.trim();
  saveSetting('token', device.token);
});
const proc = /** @type {HTMLInputElement} */ ($('processing'));
proc.checked = device.mic.processing;
proc.addEventListener('change', () => {
  device.mic.processing = proc.checked;
  saveSetting('processing', proc.checked ? '1' : '0');
  // The constraint applies when the microphone next opens.
  if (device.mic.open && !device.sending) device.mic.stop();
});

$('device-id').textContent = identity.deviceId;
setVolume(player.volume);
renderControls();
renderTools();
renderStats();

/** Read-only view for automated tests and curious developers. */
Object.defineProperty(window, '__xiaozhi', {
  value: {
    device,
    player,
    get state() {
      return device.state;
    },
    get volume() {
      return player.volume;
    },
    get stats() {
      return {
        ...player.stats,
        sent: device.stats.sent,
        droppedByDevice: device.stats.dropped,
        playing: player.playing,
        mcp: { ...device.mcp.stats },
      };
    },
    get turns() {
      return device.turns.map((t) => ({ ...t }));
    },
  },
});
