/**
 * The browser page and every file it loads carry the headers that keep it from being framed,
 * sniffed or made to run foreign code: a Content-Security-Policy that allows only the server's
 * own scripts (and eval, which the Opus WASM fallback's Emscripten glue needs), its own WebSocket,
 * and no framing. The browser tests (test/e2e) fail on any CSP violation, so they prove the policy
 * lets the page work.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { recordingConversation } from '../../helpers/recording-conversation.ts';
import { startTestApp, type TestApp } from '../../helpers/test-app.ts';

let t: TestApp;
before(async () => {
  t = await startTestApp({ createConversation: recordingConversation().factory });
});
after(() => t.close());

/** The CSP's directives, by name. */
function directives(csp: string): Map<string, string[]> {
  return new Map(
    csp
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .filter((parts) => parts[0])
      .map((parts) => [parts[0] as string, parts.slice(1)]),
  );
}

for (const path of ['/', '/index.html', '/js/main.js', '/app.css', '/vendor/opusscript/opusscript_native_wasm.js']) {
  test(`GET ${path}: CSP, no framing, no sniffing`, async () => {
    const res = await fetch(`${t.httpUrl}${path}`);
    await res.arrayBuffer();
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-frame-options'), 'DENY');
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    const csp = directives(res.headers.get('content-security-policy') ?? '');
    assert.deepEqual(csp.get('default-src'), ["'self'"]);
    assert.deepEqual(csp.get('frame-ancestors'), ["'none'"]);
    assert.deepEqual(csp.get('script-src'), ["'self'", "'unsafe-eval'"]);
    assert.deepEqual(csp.get('connect-src'), ["'self'", 'ws:', 'wss:']);
    assert.deepEqual(csp.get('object-src'), ["'none'"]);
    for (const [name, sources] of csp) assert.ok(!sources.includes("'unsafe-inline'"), `${name} allows no inline code`);
  });
}
