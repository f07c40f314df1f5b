/**
 * The agent's MCP endpoint panel in real Chromium at a phone's viewport: create the URL, copy it
 * with the button (the clipboard holds it), connect a bridge built from the MCP SDK's McpServer
 * with that URL, see the bridge and its tools after a refresh, revoke (the bridge is closed). No
 * page error, nothing wider than the screen.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chromium, type Browser } from 'playwright-core';
import { startTestApp, type TestApp } from '../helpers/test-app.ts';
import { recordingConversation } from '../helpers/recording-conversation.ts';
import { connectSdkBridge } from '../fixtures/mcp-ws-bridge.ts';
import { CHROMIUM, haveChromium, openPage } from './browser/harness.ts';

const TOKEN = 'console-admin-token-for-the-endpoint-panel';
const PHONE = { width: 390, height: 844 };

describe('MCP endpoint panel in the console', {
  skip: haveChromium ? false : 'needs Debian chromium at /usr/bin/chromium (apt-get install chromium)',
  timeout: 120_000,
}, () => {
  let t: TestApp;
  let browser: Browser;

  before(async () => {
    t = await startTestApp({
      createConversation: recordingConversation().factory,
      config: { admin: { token: TOKEN } },
    });
    await t.app.store.agents.create('kitchen', {});
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  test('create and copy the URL, see the bridge and its tools, revoke', async () => {
    const { context, page, errors } = await openPage(browser, `${t.httpUrl}/admin`, {
      viewport: PHONE,
      isMobile: true,
      hasTouch: true,
    });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: t.httpUrl });
    await page.fill('#token', TOKEN);
    await page.click('#sign-in-form button[type=submit]');
    await page.locator('#console').waitFor({ state: 'visible' });
    await page.click('[data-tab=agents]');
    const card = page.locator('details.agent[data-agent=kitchen]');
    await card.locator('summary').first().click();
    const panel = card.locator('details.mcp-endpoint');
    await panel.locator('summary').click();
    await panel.locator('button', { hasText: 'Create endpoint URL' }).click();
    const url = await panel.locator('input.endpoint-url').inputValue();
    assert.match(url, /^ws:\/\/127\.0\.0\.1:\d+\/mcp\/\?token=[A-Za-z0-9_-]{43}$/);
    await panel.locator('button.copy').click();
    await panel.locator('button.copy', { hasText: 'Copied' }).waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), url);

    const bridge = await connectSdkBridge(url, 'calculator', [
      { name: 'calculator', description: 'x', run: () => '42' },
      { name: 'convert', description: 'y', run: () => 'ok' },
    ]);
    try {
      await panel.locator('button', { hasText: 'Refresh' }).click();
      const item = panel.locator('li[data-bridge=calculator]');
      await item.waitFor({ timeout: 10_000 });
      assert.match(await item.innerText(), /2 tools[\s\S]*calculator, convert/);
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      assert.ok(width <= PHONE.width, `page is ${width}px wide on a ${PHONE.width}px screen`);

      const revoke = panel.locator('button', { hasText: 'Revoke' });
      await revoke.click();
      await panel.locator('button', { hasText: 'Really revoke?' }).click();
      const closed = await bridge.closed;
      assert.equal(closed.code, 1008);
      await panel.locator('button', { hasText: 'Create endpoint URL' }).waitFor();
      assert.deepEqual(errors, []);
    } finally {
      await bridge.close().catch(() => undefined);
    }
  });
});
