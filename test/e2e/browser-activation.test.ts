/**
 * The browser page against a server in `activation` mode, in real Chromium: the page is a new
 * device, so it shows the activation code; once the owner binds the code, the page connects by
 * itself and a typed question is answered.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { startFakeOpenAi, fakeText, type FakeOpenAi } from '../fixtures/fake-openai.ts';
import { startVoiceApp, type VoiceApp } from '../helpers/voice-app.ts';
import { haveChromium, launchChromium, openPage, writeSpeechWav } from './browser/harness.ts';

describe('browser page in activation mode', {
  skip: haveChromium ? false : 'needs Debian chromium at /usr/bin/chromium (apt-get install chromium)',
}, () => {
  let llm: FakeOpenAi;
  let srv: VoiceApp;
  let browser: Browser;
  let dir: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'browser-activation-'));
    const wav = join(dir, 'mic.wav');
    writeSpeechWav(wav, 'hello', 200, 200);
    llm = await startFakeOpenAi();
    // The image's way to bind (as its XIAOZHI_BIND_COMMAND says): the page must show the server's words.
    srv = await startVoiceApp(llm.url, {
      server: { dataDir: dir, auth: { mode: 'activation', bindCommand: 'devices bind {code} in the container' } },
    });
    browser = await launchChromium(wav);
  });
  after(async () => {
    await browser?.close();
    await srv?.close();
    await llm?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('shows the code, connects once bound, and talks', async () => {
    const { page, errors } = await openPage(browser, `${srv.httpUrl}/?processing=0`, {
      viewport: { width: 1280, height: 800 },
    });
    await page.click('#connect');
    await page.waitForFunction(
      () => /\d{6}/.test(document.getElementById('activation')?.textContent ?? ''),
      undefined,
      { timeout: 30_000 },
    );
    const shown = /(\d{6})/.exec((await page.textContent('#activation')) ?? '')?.[1] ?? '';
    const pending = (await srv.app.devices?.list())?.pending ?? [];
    assert.equal(pending.length, 1);
    assert.equal(pending[0]?.code, shown);
    assert.match(
      (await page.textContent('#activation')) ?? '',
      new RegExp(`On the server run: devices bind ${shown} in the container`),
      'the command the server names, not one the page guesses',
    );
    assert.equal(await page.textContent('#session-id'), '–', 'not connected before binding');

    assert.equal((await srv.app.devices?.bind(shown))?.ok, true);
    await page.waitForFunction(
      () => /^[0-9a-f-]{36}$/.test(document.getElementById('session-id')?.textContent ?? ''),
      undefined,
      { timeout: 30_000 },
    );
    assert.equal(await page.isHidden('#activation'), true);

    llm.script(fakeText('Hello from a bound page.'));
    await page.fill('#text', 'Are you there?');
    await page.click('#send');
    await page.locator('.msg.assistant', { hasText: 'Hello from a bound page.' }).waitFor({ timeout: 20_000 });
    assert.deepEqual(errors, []);
  });
});
