// An agent's MCP endpoint panel: the URL users paste into their bridge (mcp_pipe.py's
// MCP_ENDPOINT, xiaozhi-client), with a copy button, shown once when the token is made; the
// bridges connected now, since when, and their tools; rotate and revoke.
import { createMcpEndpoint, getMcpEndpoint, revokeMcpEndpoint } from './api.js';
import { ago, confirmButton, fill, h } from './dom.js';

async function copy(text, button) {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    // No clipboard API (plain http): select the text so Ctrl+C copies it.
    const field = button.previousElementSibling;
    field?.select?.();
    document.execCommand?.('copy');
  }
  button.textContent = 'Copied';
  setTimeout(() => (button.textContent = 'Copy'), 1500);
}

function urlRow(url) {
  const field = h('input', {
    type: 'text',
    readonly: true,
    value: url,
    class: 'endpoint-url',
    'aria-label': 'MCP endpoint URL',
  });
  const button = h('button', { type: 'button', class: 'btn copy' }, 'Copy');
  button.addEventListener('click', () => void copy(url, button));
  return h('div', { class: 'row endpoint' }, field, button);
}

function bridgeList(bridges) {
  if (bridges.length === 0) return h('p', { class: 'muted bridges-none' }, 'No bridge connected to this server.');
  return h(
    'ul',
    { class: 'bridges' },
    bridges.map((b) =>
      h(
        'li',
        { 'data-bridge': b.name },
        h('strong', {}, b.name),
        ` · connected ${ago(b.connectedAt)} · ${b.toolCount} tool${b.toolCount === 1 ? '' : 's'}`,
        b.tools.length > 0 ? h('p', { class: 'facts tools' }, b.tools.join(', ')) : null,
      ),
    ),
  );
}

/** The panel for agent `name`; loads its state when opened. `done(message, isError)` reports. */
export function endpointPanel(name, done) {
  const body = h('div', { class: 'endpoint-body' }, h('p', { class: 'muted' }, 'Loading…'));
  const panel = h(
    'details',
    { class: 'mcp-endpoint', 'data-agent': name },
    h('summary', {}, 'MCP endpoint (your own tools)'),
    body,
  );
  let fresh;

  const render = (st) => {
    const created = fresh
      ? [h('p', {}, 'Paste this URL into your bridge (MCP_ENDPOINT). It is shown only now:'), urlRow(fresh)]
      : st.enabled
        ? [
            h(
              'p',
              { class: 'muted' },
              `A token exists (made ${ago(st.tokenCreatedAt)}). Its URL was shown when it was made; rotate to get a new one. Endpoint: ${st.url}`,
            ),
          ]
        : [
            h(
              'p',
              { class: 'muted' },
              'No endpoint yet: create one to connect your own MCP servers (mcp_pipe.py, xiaozhi-client).',
            ),
          ];
    const issue = async () => {
      try {
        fresh = (await createMcpEndpoint(name)).url;
        await load();
      } catch (err) {
        done(err.message, true);
      }
    };
    // Rotating disconnects the bridges on the old URL: asked twice.
    const make = st.enabled
      ? confirmButton('Rotate URL', 'Really rotate? Bridges disconnect.', () => void issue())
      : h('button', { type: 'button', class: 'btn primary', onclick: () => void issue() }, 'Create endpoint URL');
    fill(
      body,
      created,
      h('h4', {}, `Bridges (${st.bridges.length}) · ${st.toolCount} tools`),
      bridgeList(st.bridges),
      h(
        'div',
        { class: 'row' },
        make,
        h('button', { type: 'button', class: 'btn', onclick: () => void load() }, 'Refresh'),
        st.enabled
          ? confirmButton('Revoke', 'Really revoke? Bridges disconnect.', async () => {
              try {
                await revokeMcpEndpoint(name);
                fresh = undefined;
                await load();
              } catch (err) {
                done(err.message, true);
              }
            })
          : null,
      ),
    );
  };

  async function load() {
    try {
      render(await getMcpEndpoint(name));
    } catch (err) {
      fill(body, h('p', { class: 'error' }, err.message));
    }
  }
  panel.addEventListener('toggle', () => {
    if (panel.open) void load();
  });
  return panel;
}
