// @ts-check
/**
 * A banner that tells the user what to set when a provider cannot work (no LLM running, a key
 * refused, a model missing). It reads the public `problems` of `/readyz` (component, problem and
 * the config keys to set) and checks again every 15 s, so it goes away once the fix is in.
 */
const POLL_MS = 15_000;
const LABEL = /** @type {Record<string, string>} */ ({
  llm: 'Language model (LLM)',
  asr: 'Speech recognition',
  tts: 'Speech synthesis',
});

/**
 * The fix as nodes: its `backticked` commands become <code> elements (as text, never as HTML).
 * @param {string} text
 * @returns {Node[]}
 */
function withCode(text) {
  return text.split('`').map((part, i) => {
    if (i % 2 === 0) return document.createTextNode(part);
    const code = document.createElement('code');
    code.textContent = part;
    return code;
  });
}

/** @param {HTMLElement} banner */
async function refresh(banner) {
  /** @type {Array<{ component: string; problem: string; fix: string }>} */
  let problems = [];
  try {
    const res = await fetch(new URL('readyz', document.baseURI), { cache: 'no-store' });
    const body = await res.json();
    if (Array.isArray(body?.problems)) problems = body.problems;
  } catch {
    return; // the server is away; the connection state says so already
  }
  banner.replaceChildren(
    ...problems.map((p) => {
      const line = document.createElement('p');
      const what = document.createElement('b');
      what.textContent = `${LABEL[p.component] ?? p.component}: ${p.problem.replace(/_/g, ' ')}. `;
      line.append(what, ...withCode(p.fix));
      line.dataset.component = p.component;
      return line;
    }),
  );
  banner.hidden = problems.length === 0;
}

const banner = document.createElement('div');
banner.id = 'setup-banner';
banner.className = 'notice setup-banner';
banner.setAttribute('role', 'alert');
banner.hidden = true;
document.querySelector('header.top')?.after(banner);
void refresh(banner);
setInterval(() => void refresh(banner), POLL_MS);
