/**
 * What the docs say about tokens matches the code: in `tokens` mode OTA never hands a static token
 * out (features/identity/ota-route.ts answers it with no `token` key), so no README, doc page or shipped
 * config may say it hands out one (a reader would expect a device to get it and connect).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { recordingConversation } from '../../helpers/recording-conversation.ts';
import { startTestApp } from '../../helpers/test-app.ts';

const FILES = [
  'README.md',
  'docker/server.yaml',
  ...readdirSync('docs')
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];
/** Phrasings that claim OTA gives out a configured (static) token. */
const CLAIM =
  /OTA hands out the first|hands out the first token|OTA (?:gives|hands) (?:out )?(?:the |a )?(?:static |configured )token/i;

test('no doc or shipped config claims OTA hands out a static token', () => {
  const found = FILES.flatMap((f) =>
    readFileSync(f, 'utf8')
      .split('\n')
      .map((line, i) => ({ where: `${f}:${i + 1}`, line }))
      .filter(({ line }) => CLAIM.test(line)),
  );
  assert.deepEqual(found, []);
});

test('the code: in tokens mode the OTA answer carries no token', async () => {
  const t = await startTestApp({
    createConversation: recordingConversation().factory,
    config: { server: { auth: { tokens: ['change-me'] } } },
  });
  try {
    const res = await fetch(`${t.httpUrl}/xiaozhi/ota/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'device-id': 'aa:00:00:00:00:41' },
      body: '{}',
    });
    const body = (await res.json()) as { websocket: Record<string, unknown> };
    assert.equal('token' in body.websocket, false);
  } finally {
    await t.close();
  }
});
