/**
 * The browser device client (web/device) in a real browser: Debian's chromium, headless, with a
 * fake microphone playing flite speech, against the real server (Silero VAD, pocketsphinx,
 * espeak-ng, Opus) and the fake OpenAI-compatible LLM. Checks what a user would: the spoken words
 * come back as text, the answer is decoded and played, timings show, typed text is answered, abort
 * silences playback, the page's device-MCP tools are listed and called; screenshots at phone and
 * desktop size are saved under test/output/ and checked to be non-blank.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { startFakeOpenAi, fakeText, fakeToolCalls, type FakeOpenAi } from '../fixtures/fake-openai.ts';
import { startVoiceApp, type VoiceApp } from '../helpers/voice-app.ts';
import { haveChromium, imageStats, launchChromium, openPage, outputPath, writeSpeechWav } from './browser/harness.ts';

interface PageStats {
  received: number;
  decoded: number;
  scheduled: number;
  played: number;
  cancelled: number;
  dropped: number;
  underruns: number;
  decodeErrors: number;
  sent: number;
  droppedByDevice: number;
  playing: boolean;
  mcp: { initialize: number; listPages: number; calls: number; ignored: number };
}

const stats = (page: Page): Promise<PageStats> =>
  page.evaluate(() => (window as unknown as { __xiaozhi: { stats: PageStats } }).__xiaozhi.stats);
const deviceState = (page: Page): Promise<string> =>
  page.evaluate(() => (window as unknown as { __xiaozhi: { state: string } }).__xiaozhi.state);

async function connect(page: Page): Promise<void> {
  await page.click('#connect');
  await page.waitForFunction(
    () => /^[0-9a-f-]{36}$/.test(document.getElementById('session-id')?.textContent ?? ''),
    undefined,
    { timeout: 30_000 },
  );
}

/** Waits until an answer has been played out and the device left `speaking`. */
async function waitPlayedOut(page: Page, minPlayed: number, timeout = 20_000): Promise<void> {
  await page.waitForFunction(
    (min) => {
      const x = (window as unknown as { __xiaozhi: { stats: PageStats; state: string } }).__xiaozhi;
      return x.stats.played >= min && !x.stats.playing && x.state !== 'speaking';
    },
    minPlayed,
    { timeout },
  );
}

async function checkScreenshot(browser: Browser, page: Page, name: string): Promise<void> {
  const png = await page.screenshot({ fullPage: false });
  mkdirSync(outputPath(''), { recursive: true });
  writeFileSync(outputPath(name), png);
  const s = await imageStats(browser, png);
  const vp = page.viewportSize();
  assert.ok(png.length > 5000, `${name}: ${png.length} bytes`);
  assert.equal(s.width, vp?.width);
  assert.equal(s.height, vp?.height);
  assert.ok(s.lumaStdDev > 8, `${name}: luminance spread ${s.lumaStdDev.toFixed(1)} (blank page?)`);
  assert.ok(s.colours > 50, `${name}: only ${s.colours} colours`);
}

describe('browser device client', {
  skip: haveChromium ? false : 'needs Debian chromium at /usr/bin/chromium (apt-get install chromium)',
}, () => {
  let llm: FakeOpenAi;
  let srv: VoiceApp;
  let browser: Browser;
  let dir: string;
  let desktop: Page;
  const errors: string[] = [];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'browser-e2e-'));
    const wav = join(dir, 'mic.wav');
    writeSpeechWav(wav, 'what is the weather today');
    llm = await startFakeOpenAi();
    srv = await startVoiceApp(llm.url);
    browser = await launchChromium(wav);
    const opened = await openPage(browser, `${srv.httpUrl}/?processing=0`, { viewport: { width: 1280, height: 800 } });
    desktop = opened.page;
    errors.push(...opened.errors);
    opened.page.on('pageerror', (e) => errors.push(e.message));
  });

  after(async () => {
    await browser?.close();
    await srv?.close();
    await llm?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('connects through OTA, hears speech as stt, decodes and plays the answer, shows timings', async () => {
    const page = desktop;
    await connect(page);
    assert.match((await page.textContent('#audio-params')) ?? '', /opus 24 kHz, 1 ch, 60 ms/);
    assert.match((await page.textContent('#codec')) ?? '', /WebCodecs/);
    assert.equal(await deviceState(page), 'idle');

    await page.click('#talk');
    await page
      .locator('.msg.user', { hasText: /weather/i })
      .first()
      .waitFor({ timeout: 30_000 });
    await page
      .locator('.msg.assistant', { hasText: /You said/ })
      .first()
      .waitFor({ timeout: 15_000 });
    await waitPlayedOut(page, 10);
    await page.click('#talk'); // end the conversation so the looping fake mic starts no new turn
    const s = await stats(page);
    assert.ok(s.sent > 20, `uplink frames sent: ${s.sent}`);
    assert.ok(s.decoded >= 10, `frames decoded: ${s.decoded}`);
    assert.ok(s.played >= s.decoded - 2, `played ${s.played} of ${s.decoded} decoded`);
    assert.equal(s.decodeErrors, 0);
    const ms = Number(await page.getAttribute('#timing', 'data-ms'));
    assert.ok(ms > 0 && ms < 20_000, `end of speech → first audio ${ms} ms`);
    assert.match((await page.textContent('#timing')) ?? '', /ms end of speech → first audio/);
    // The model saw the recognised words.
    assert.ok(
      llm.requests.some((r) => r.body.messages.some((m) => m.role === 'user' && /weather/i.test(String(m.content)))),
    );
    await checkScreenshot(browser, page, 'browser-desktop.png');
  });

  test('typed text is answered; abort silences playback at once', async () => {
    const page = desktop;
    llm.script(fakeText('Paris is the capital of France.'));
    await page.fill('#text', 'What is the capital of France?');
    await page.click('#send');
    await page.locator('.msg.assistant', { hasText: 'Paris is the capital of France.' }).waitFor({ timeout: 15_000 });
    const before = await stats(page);
    await waitPlayedOut(page, before.played + 5);

    const story = Array.from({ length: 12 }, (_, i) => `This is sentence number ${i + 1} of a long story.`).join(' ');
    llm.script(fakeText(story));
    const start = await stats(page);
    await page.fill('#text', 'Tell me a long story');
    await page.click('#send');
    await page.waitForFunction(
      (min) => (window as unknown as { __xiaozhi: { stats: PageStats } }).__xiaozhi.stats.played >= min,
      start.played + 5,
      { timeout: 20_000 },
    );
    await page.click('#abort');
    const atAbort = await stats(page);
    await page.waitForFunction(
      () => (window as unknown as { __xiaozhi: { state: string } }).__xiaozhi.state === 'idle',
      undefined,
      { timeout: 5000 },
    );
    await page.waitForTimeout(1200);
    const later = await stats(page);
    assert.equal(later.playing, false, 'nothing is sounding after abort');
    assert.equal(later.scheduled, atAbort.scheduled, 'no frame was scheduled after abort');
    assert.ok(later.played - atAbort.played <= 1, `frames played after abort: ${later.played - atAbort.played}`);
    assert.ok(later.decoded - start.decoded < 12 * 25, 'the long story was cut short');
  });

  test('memory: a fact told on the page comes back after a disconnect and a reconnect', async () => {
    const page = desktop;
    if ((await page.textContent('#connect')) === 'Connect') await connect(page);
    llm.script(
      fakeToolCalls([{ name: 'remember', arguments: { fact: 'my daughter is called Mia' } }]),
      fakeText('I will remember that.'),
    );
    await page.fill('#text', 'remember that my daughter is called Mia');
    await page.click('#send');
    await page.locator('.msg.assistant', { hasText: 'I will remember that.' }).waitFor({ timeout: 15_000 });
    await page.waitForFunction(
      () => (window as unknown as { __xiaozhi: { state: string } }).__xiaozhi.state !== 'speaking',
      undefined,
      { timeout: 20_000 },
    );
    // Disconnect and connect again at once: a new session of the same device (the page keeps its identity).
    await page.click('#connect');
    await page.locator('#connect', { hasText: 'Connect' }).waitFor();
    await connect(page);
    await page.fill('#text', 'what is my daughter called');
    await page.click('#send');
    await page
      .locator('.msg.assistant', { hasText: 'You said: what is my daughter called.' })
      .waitFor({ timeout: 15_000 });
    const req = [...llm.requests]
      .reverse()
      .find(
        (r) =>
          r.body.messages.at(-1)?.role === 'user' && r.body.messages.at(-1)?.content === 'what is my daughter called',
      );
    assert.ok(req, 'the model was asked');
    const system = req.body.messages[0];
    assert.match(typeof system?.content === 'string' ? system.content : '', /"my daughter is called Mia"/);
    assert.ok(
      req.body.messages.some((m) => m.role === 'user' && m.content === 'remember that my daughter is called Mia'),
      'the earlier turn is in the history',
    );
  });

  test('device MCP: paged tools/list reaches the model, a turn calls set_volume on the page', async () => {
    // A small page budget makes the server follow nextCursor over several tools/list pages.
    const { page, context } = await openPage(browser, `${srv.httpUrl}/?processing=0&mcpPageBytes=700`, {
      viewport: { width: 1280, height: 800 },
    });
    try {
      await connect(page);
      await page.waitForFunction(
        () => (window as unknown as { __xiaozhi: { stats: PageStats } }).__xiaozhi.stats.mcp.listPages >= 2,
        undefined,
        { timeout: 10_000 },
      );
      const first = llm.requests.length;
      llm.script(
        fakeToolCalls([{ name: 'self_audio_speaker_set_volume', arguments: { volume: 30 } }]),
        fakeText('The volume is now 30.'),
      );
      await page.fill('#text', 'Set the volume to 30');
      await page.click('#send');
      await page.locator('.msg.assistant', { hasText: 'The volume is now 30.' }).waitFor({ timeout: 15_000 });
      assert.equal(
        await page.evaluate(() => (window as unknown as { __xiaozhi: { volume: number } }).__xiaozhi.volume),
        30,
      );
      assert.equal(await page.inputValue('#volume'), '30');
      await page.locator('.msg.tool', { hasText: 'self.audio_speaker.set_volume' }).waitFor({ timeout: 2000 });

      const turnReqs = llm.requests.slice(first);
      const tools = (turnReqs[0]?.body.tools ?? []).map((t) => t.function.name);
      for (const name of [
        'self_get_device_status',
        'self_audio_speaker_set_volume',
        'self_screen_set_theme',
        'self_screen_show_notice',
      ]) {
        assert.ok(tools.includes(name), `model sees ${name}; tools: ${tools.join(', ')}`);
      }
      assert.ok(!tools.includes('self_get_system_info'), 'user-only tools are not listed');
      const toolMsg = turnReqs[1]?.body.messages.find((m) => m.role === 'tool');
      assert.equal(String(toolMsg?.content), 'true');
      const s = await stats(page);
      assert.ok(s.mcp.listPages >= 2 && s.mcp.calls === 1, JSON.stringify(s.mcp));
    } finally {
      await context.close();
    }
  });

  test('phone-sized screen with the WASM Opus codec: push-to-talk and a typed turn', async () => {
    const {
      page,
      context,
      errors: pageErrors,
    } = await openPage(browser, `${srv.httpUrl}/?processing=0&codec=wasm&mode=manual`, {
      viewport: { width: 390, height: 844 },
      isMobile: true,
      hasTouch: true,
    });
    try {
      await connect(page);
      assert.match((await page.textContent('#codec')) ?? '', /WASM/);
      // Hold to talk over the whole utterance (1 s lead + speech), then release.
      const box = await page.locator('#talk').boundingBox();
      assert.ok(box);
      await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
      await page.mouse.down();
      await page.waitForTimeout(3800);
      await page.mouse.up();
      await page
        .locator('.msg.user', { hasText: /weather/i })
        .first()
        .waitFor({ timeout: 20_000 });
      await waitPlayedOut(page, 10);
      const s = await stats(page);
      assert.ok(s.sent > 40 && s.decoded >= 10 && s.decodeErrors === 0, JSON.stringify(s));
      assert.equal(await deviceState(page), 'idle', 'manual mode returns to idle after the answer');

      llm.script(fakeText('Typed on a phone.'));
      await page.fill('#text', 'hello from the phone');
      await page.click('#send');
      await page.locator('.msg.assistant', { hasText: 'Typed on a phone.' }).waitFor({ timeout: 15_000 });
      await checkScreenshot(browser, page, 'browser-phone.png');
      assert.deepEqual(pageErrors, []);
    } finally {
      await context.close();
    }
    assert.deepEqual(errors, []);
  });
});
