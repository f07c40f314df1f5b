/**
 * Loading the browser page (the HTML and every file it pulls in) writes no info line per static
 * file: those requests are logged at debug. Requests that matter to an operator (OTA) stay at info.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { recordingConversation } from '../../helpers/recording-conversation.ts';
import { startTestApp, type TestApp } from '../../helpers/test-app.ts';
import { PUBLIC_DIR } from '../../../server/web-route.ts';

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)],
  );
}

const REQUEST_LINES = new Set(['incoming request', 'request completed']);

let t: TestApp;
before(async () => {
  t = await startTestApp({ createConversation: recordingConversation().factory });
});
after(() => t.close());

test('a page load: static files are logged at debug, none at info', async () => {
  const paths = [
    '/',
    ...filesUnder(PUBLIC_DIR).map((f) => `/${relative(PUBLIC_DIR, f)}`),
    '/vendor/opusscript/opusscript_native_wasm.js',
  ];
  const from = t.logs.lines.length;
  for (const p of paths) {
    const res = await fetch(`${t.httpUrl}${p}`);
    assert.equal(res.status, 200, p);
    await res.arrayBuffer();
  }
  const lines = t.logs.lines.slice(from).filter((l) => REQUEST_LINES.has(String(l.msg)));
  const info = lines.filter((l) => Number(l.level) >= 30);
  assert.deepEqual(info, [], 'no info line for a static file');
  const urls = lines
    .filter((l) => l.msg === 'incoming request')
    .map((l) => (l.req as { url?: string } | undefined)?.url);
  assert.deepEqual(urls, paths, 'each is still there at debug');
  assert.equal(lines.filter((l) => l.msg === 'request completed').length, paths.length);
});

test('OTA requests stay at info', async () => {
  const from = t.logs.lines.length;
  await (
    await fetch(`${t.httpUrl}/xiaozhi/ota/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'device-id': 'aa:00:00:00:00:31' },
      body: '{}',
    })
  ).arrayBuffer();
  const lines = t.logs.lines.slice(from).filter((l) => REQUEST_LINES.has(String(l.msg)));
  assert.deepEqual(
    lines.map((l) => [l.msg, l.level]),
    [
      ['incoming request', 30],
      ['request completed', 30],
    ],
  );
});
