// The admin console: sign-in, the four tabs, and a refresh every few seconds of what changes by
// itself (pending devices, who is online). A tab being edited is not redrawn under the user.
import { listAgents, listDevices, listSessions, onSignedOut, signIn, signOut, whoAmI } from './api.js';
import { renderPending, renderDevices } from './devices.js';
import { renderAgents } from './agents.js';
import { renderOnline } from './online.js';

const $ = (id) => document.getElementById(id);
const TABS = ['pending', 'devices', 'agents', 'online'];
let current = 'pending';
let timer = null;
let lastShown = '';

function showSignIn(message = '') {
  clearInterval(timer);
  timer = null;
  $('console').hidden = true;
  $('sign-out').hidden = true;
  $('sign-in').hidden = false;
  $('sign-in-error').textContent = message;
  $('token').focus();
}

function notice(message, isError = false) {
  const n = $('notice');
  n.textContent = message;
  n.classList.toggle('error', isError);
  n.hidden = !message;
}

/** A form control inside the tab has the focus: the user is typing or choosing. */
function editing(tab) {
  const a = document.activeElement;
  return a && tab.contains(a) && ['INPUT', 'TEXTAREA', 'SELECT'].includes(a.tagName);
}

async function refresh(force = false) {
  const tab = $(`tab-${current}`);
  if (!force && (editing(tab) || current === 'agents')) return;
  try {
    const [devices, agents, sessions] = await Promise.all([
      listDevices(),
      listAgents(),
      current === 'online' ? listSessions() : Promise.resolve([]),
    ]);
    const pending = devices.filter((d) => d.state === 'pending').length;
    $('pending-count').textContent = pending ? String(pending) : '';
    // Redraw only when something changed, so a poll does not reset a half-made choice.
    const key = JSON.stringify([current, devices, agents, sessions]);
    if (!force && key === lastShown) return;
    lastShown = key;
    const done = (message, isError) => {
      notice(message, isError);
      if (!isError) void refresh(true);
    };
    if (current === 'pending') renderPending(tab, devices, agents, done);
    else if (current === 'devices') renderDevices(tab, devices, agents, done);
    else if (current === 'agents') renderAgents(tab, agents, done);
    else renderOnline(tab, sessions, devices);
  } catch (err) {
    if (err.status !== 401) notice(err.message, true);
  }
}

function select(tab) {
  current = tab;
  for (const t of TABS) {
    $(`tab-${t}`).hidden = t !== tab;
    document.querySelector(`[data-tab="${t}"]`).setAttribute('aria-current', t === tab ? 'page' : 'false');
  }
  notice('');
  void refresh(true);
}

function showConsole() {
  $('sign-in').hidden = true;
  $('console').hidden = false;
  $('sign-out').hidden = false;
  select(current);
  clearInterval(timer);
  timer = setInterval(() => void refresh(), 3000);
}

$('sign-in-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  try {
    await signIn($('token').value);
    $('token').value = '';
    showConsole();
  } catch (err) {
    $('sign-in-error').textContent = err.message;
  }
});
$('sign-out').addEventListener('click', async () => {
  await signOut().catch(() => {});
  showSignIn();
});
for (const t of TABS) document.querySelector(`[data-tab="${t}"]`).addEventListener('click', () => select(t));
onSignedOut(() => showSignIn('Signed out: sign in again.'));

// A refusal (by origin: the message says what to set) is shown above the sign-in form.
whoAmI().then(
  (r) => (r.signedIn ? showConsole() : showSignIn()),
  (err) => showSignIn(err.status === 403 ? err.message : ''),
);
