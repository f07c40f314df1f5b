/**
 * The device page and the admin console in real Chromium behind a reverse proxy that drops the
 * port from Host (as nginx's `$host` does): the server refuses the page's requests by Origin, and
 * the page and the console say what to set instead of a bare "HTTP 403". A page elsewhere, whose
 * OTA URL points at this server, is told that server.allowedOrigins is the likely cause.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser } from 'playwright-core';
import { recordingConversation } from '../helpers/recording-conversation.ts';
import { startTestApp, type TestApp } from '../helpers/test-app.ts';
import { CHROMIUM, haveChromium, openPage } from './browser/harness.ts';

const TOKEN = 'origin-refused-admin-token-0123456789';

/** Forwards every request to `port` with Host set to the name alone (no port), like nginx's `proxy_set_header Host $host`. */
async function hostDroppingProxy(port: number): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const host = (req.headers.host ?? '').replace(/:\d+$/, '');
    const upstream = request(
      { host: '127.0.0.1', port, method: req.method, path: req.url, headers: { ...req.headers, host } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: own } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${own}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('refused by origin: the page and the console say what to set', {
  skip: haveChromium ? false : 'needs Debian chromium at /usr/bin/chromium (apt-get install chromium)',
}, () => {
  let t: TestApp;
  let elsewhere: TestApp;
  let proxy: Awaited<ReturnType<typeof hostDroppingProxy>>;
  let browser: Browser;
  before(async () => {
    t = await startTestApp({
      createConversation: recordingConversation().factory,
      config: { admin: { token: TOKEN } },
    });
    elsewhere = await startTestApp({ createConversation: recordingConversation().factory });
    proxy = await hostDroppingProxy(t.port);
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
    await proxy?.close();
    await elsewhere?.close();
    await t?.close();
  });

  test('the device page behind the proxy names the proxy setting', async () => {
    const { context, page } = await openPage(browser, `${proxy.url}/`);
    try {
      await page.click('#connect');
      const error = page.locator('.msg.error', { hasText: 'OTA refused this page' });
      await error.waitFor({ timeout: 20_000 });
      assert.match((await error.textContent()) ?? '', /proxy_set_header Host \$http_host/);
    } finally {
      await context.close();
    }
  });

  test('the console behind the proxy names it too, at sign-in', async () => {
    const { context, page } = await openPage(browser, `${proxy.url}/admin/`);
    try {
      await page.fill('#token', TOKEN);
      await page.click('#sign-in-form button[type=submit]');
      await page.waitForFunction(
        () => (document.getElementById('sign-in-error')?.textContent ?? '').length > 0,
        undefined,
        { timeout: 20_000 },
      );
      assert.match((await page.textContent('#sign-in-error')) ?? '', /proxy_set_header Host \$http_host/);
    } finally {
      await context.close();
    }
  });

  test('a page elsewhere pointed at this server names server.allowedOrigins', async () => {
    const { context, page } = await openPage(browser, `${elsewhere.httpUrl}/`);
    try {
      // The page's OTA URL setting (kept in localStorage), pointed at the other server.
      await page.evaluate((url) => localStorage.setItem('xiaozhi.otaUrl', url), `${t.httpUrl}/xiaozhi/ota/`);
      await page.reload();
      await page.click('#connect');
      const error = page.locator('.msg.error', { hasText: 'unreachable' });
      await error.waitFor({ timeout: 20_000 });
      assert.match(
        (await error.textContent()) ?? '',
        new RegExp(`add "${elsewhere.httpUrl}" to its server\\.allowedOrigins`),
      );
    } finally {
      await context.close();
    }
  });
});
