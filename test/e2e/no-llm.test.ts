/**
 * A newcomer's first run with no LLM listening: the start-up log names the keys and env variables
 * to set, `/readyz` carries the same fix publicly (no host or port), a turn is answered with the
 * LLM's own apology (audible), and the browser page (real Chromium) shows the fix in a banner.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { DeviceSim } from '../fixtures/device-sim.ts';
import { decodeDownlink } from '../helpers/speech.ts';
import { startVoiceApp, type VoiceApp } from '../helpers/voice-app.ts';
import { haveChromium, launchChromium, openPage, writeSpeechWav } from './browser/harness.ts';

/** A loopback port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('no LLM running', () => {
  let srv: VoiceApp;
  let port: number;
  before(async () => {
    port = await closedPort();
    srv = await startVoiceApp(`http://127.0.0.1:${port}/v1`);
  });
  after(async () => {
    await srv?.close();
  });

  test('the start-up log has one line naming the keys and env variables to set', () => {
    const lines = srv.logs.lines.filter((l) => l.component === 'llm' && l.problem === 'unreachable');
    assert.equal(lines.length, 1, srv.logs.text());
    const msg = String(lines[0]?.msg);
    for (const key of [
      'llm.baseURL',
      'OPENAI_BASE_URL',
      'llm.apiKey',
      'OPENAI_API_KEY',
      'llm.model',
      'LLM_MODEL',
      'ollama pull',
    ])
      assert.ok(msg.includes(key), `${key} in: ${msg}`);
    assert.equal(lines[0]?.level, 50, 'logged as an error');
  });

  test('/readyz shows the fix publicly, without the host or port', async () => {
    const res = await fetch(`${srv.httpUrl}/readyz`);
    const body = (await res.json()) as {
      status: string;
      problems: Array<{ component: string; problem: string; fix: string }>;
    };
    assert.equal(body.status, 'degraded');
    assert.deepEqual(
      body.problems.map((p) => [p.component, p.problem]),
      [['llm', 'unreachable']],
    );
    const fix = body.problems[0]?.fix ?? '';
    assert.match(fix, /llm\.baseURL/);
    assert.ok(!fix.includes(String(port)) && !fix.includes('127.0.0.1'), fix);
  });

  test('a turn is answered with the LLM apology, audibly', async () => {
    const dev = new DeviceSim({ url: srv.wsUrl });
    try {
      await dev.hello();
      dev.listen('detect', { text: 'what is the weather' });
      await dev.waitJson('tts', 'stop', 20_000);
      const said = dev.json
        .filter((j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start')
        .map((j) => String(j.msg.text));
      assert.deepEqual(said, [srv.config.conversation.apologies.llm]);
      assert.match(said[0] ?? '', /language model/);
      const decoded = await decodeDownlink(dev.audio.map((a) => a.payload));
      assert.ok(decoded.ms > 1000 && decoded.rms > 300, `audible apology: ${decoded.ms} ms, rms ${decoded.rms}`);
      assert.equal(srv.logs.find('turn failed; apologising').at(-1)?.part, 'llm');
    } finally {
      dev.close();
    }
  });

  describe('the browser page', { skip: haveChromium ? false : 'needs Debian chromium at /usr/bin/chromium' }, () => {
    let browser: Browser;
    let dir: string;
    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'no-llm-'));
      const wav = join(dir, 'mic.wav');
      writeSpeechWav(wav, 'hello');
      browser = await launchChromium(wav);
    });
    after(async () => {
      await browser?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    test('shows a banner naming what to set, commands as code', async () => {
      const { page, context } = await openPage(browser, `${srv.httpUrl}/`, { viewport: { width: 1280, height: 800 } });
      try {
        const banner = page.locator('#setup-banner');
        await banner.waitFor({ state: 'visible', timeout: 15_000 });
        const text = (await banner.textContent()) ?? '';
        assert.match(text, /Language model \(LLM\): unreachable/);
        assert.match(text, /llm\.baseURL/);
        assert.match(text, /OPENAI_BASE_URL/);
        // The fix's `commands` are shown as code, not with their Markdown backticks.
        assert.equal(text.includes('`'), false, text);
        assert.ok((await banner.locator('code').allTextContents()).includes('ollama serve'), await banner.innerHTML());
      } finally {
        await context.close();
      }
    });
  });
});
