/**
 * The admin console in real Chromium at a phone's viewport (390×844), against the whole server
 * (assembled as in production, SQLite store in a temp data directory): sign in with the admin
 * token, create an agent and edit its prompt, see a device that asked OTA for a code (a real OTA request in activation
 * mode) with the code it speaks, bind it to that agent with one click, then move it to another
 * agent while it is connected: its next answer uses the other agent's prompt; say a text on it from its card; move an earlier Client-Id's memory to its current one, delete its memory, cancel a reminder. Sign out. Switch an agent to a realtime model (pipeline, dialect, URL, write-only key, model, voice, instructions). No CSP violation or page error on the way, and nothing wider than the screen.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import {
  fakeText,
  startFakeOpenAi,
  type FakeMessage,
  type FakeOpenAi,
  type RecordedRequest,
} from '../fixtures/fake-openai.ts';
import { DeviceSim } from '../fixtures/device-sim.ts';
import { startVoiceApp, type VoiceApp } from '../helpers/voice-app.ts';
import { CHROMIUM, haveChromium, openPage, outputPath } from './browser/harness.ts';
import { uploadPhoto } from '../integration/vision/camera-upload.ts';

const TOKEN = 'console-admin-token-0123456789abcdef';
const DEVICE = { 'Device-Id': 'e4:00:00:00:00:31', 'Client-Id': '7c1d2e3f-0000-4000-8000-000000000031' };
const PHONE = { width: 390, height: 844 };

describe('admin console in Chromium, phone viewport', {
  skip: haveChromium ? false : 'needs Debian chromium at /usr/bin/chromium (apt-get install chromium)',
}, () => {
  let llm: FakeOpenAi;
  let srv: VoiceApp;
  let browser: Browser;
  let dir: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'admin-console-'));
    llm = await startFakeOpenAi();
    srv = await startVoiceApp(llm.url, {
      admin: { token: TOKEN },
      server: { dataDir: dir, auth: { mode: 'activation' } },
    });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  });
  after(async () => {
    await browser?.close();
    await srv?.close();
    await llm?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** The page fits the phone: no horizontal scrolling. */
  async function fitsWidth(page: Page): Promise<void> {
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(width <= PHONE.width, `page is ${width}px wide on a ${PHONE.width}px screen`);
  }

  /** Types `text` (as `listen detect`), waits for the answer to end, returns the system prompt of the chat request it made. */
  async function ask(dev: DeviceSim, text: string): Promise<string> {
    const from = dev.json.length;
    dev.listen('detect', { text });
    await dev.waitJson('tts', 'stop', 20_000, from);
    const userText = (r: RecordedRequest): string => {
      const u = [...r.body.messages].reverse().find((m) => m.role === 'user');
      return typeof u?.content === 'string' ? u.content : '';
    };
    const req = [...llm.requests].reverse().find((r) => userText(r) === text);
    assert.ok(req, `the model was asked "${text}"`);
    const system: FakeMessage | undefined = req.body.messages[0];
    return system?.role === 'system' && typeof system.content === 'string' ? system.content : '';
  }

  const agentOf = async (): Promise<string | null | undefined> =>
    (await srv.app.store.devices.get(DEVICE['Device-Id']))?.agent;

  test('sign in, bind a pending device to an agent with one click, move it to another agent', async () => {
    await srv.app.store.agents.create('bedroom', { systemPrompt: 'Speak softly.' });
    const { page, errors } = await openPage(browser, `${srv.httpUrl}/admin`, {
      viewport: PHONE,
      isMobile: true,
      hasTouch: true,
    });
    assert.match(page.url(), /\/admin\/$/);

    // Wrong token first: the form says so and stays.
    await page.fill('#token', 'not-the-admin-token-000');
    await page.click('#sign-in-form button[type=submit]');
    await page.locator('#sign-in-error', { hasText: 'wrong admin token' }).waitFor();
    await fitsWidth(page);
    await page.fill('#token', TOKEN);
    await page.click('#sign-in-form button[type=submit]');
    await page.locator('#console').waitFor({ state: 'visible' });
    const cookies = await page.context().cookies();
    assert.equal(cookies.find((c) => c.name === 'xiaozhi_admin')?.httpOnly, true);

    // A new agent, made in the console.
    await page.click('[data-tab=agents]');
    await page.click('details.create > summary');
    const form = page.locator('details.create form');
    await form.locator('input[name=name]').fill('kitchen');
    await form.locator('textarea[name=systemPrompt]').fill('You are a cook.');
    await form.locator('input[name=llm-apiKey]').fill('sk-console-key-0000000001');
    await form.locator('button[type=submit]').click();
    await page.locator('#notice', { hasText: 'Created kitchen.' }).waitFor();
    await page.locator('details.agent[data-agent=kitchen]').waitFor();
    assert.equal((await page.content()).includes('sk-console-key-0000000001'), false, 'the key is not shown back');
    await fitsWidth(page);

    // Its prompt edited: the new one is stored, the write-only key kept.
    const kitchen = page.locator('details.agent[data-agent=kitchen]');
    await kitchen.locator(':scope > summary').click();
    assert.equal(await kitchen.locator('input[name=llm-apiKey]').inputValue(), '');
    assert.match((await kitchen.locator('input[name=llm-apiKey]').getAttribute('placeholder')) ?? '', /^set/);
    await kitchen.locator('textarea[name=systemPrompt]').fill('You are a baker.');
    await kitchen.locator('button[type=submit]').click();
    await page.locator('#notice', { hasText: 'Saved kitchen.' }).waitFor();
    const stored = await srv.app.store.agents.get('kitchen');
    assert.equal(stored?.settings.systemPrompt, 'You are a baker.');
    assert.equal((stored?.settings.llm as Record<string, unknown> | undefined)?.apiKey, 'sk-console-key-0000000001');

    // A device asks OTA for a code: it shows up as pending with that code.
    const res = await fetch(`${srv.httpUrl}/xiaozhi/ota/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...DEVICE },
      body: JSON.stringify({
        version: 2,
        mac_address: DEVICE['Device-Id'],
        uuid: DEVICE['Client-Id'],
        application: { name: 'xiaozhi', version: '2.4.2' },
      }),
    });
    const code = ((await res.json()) as { activation?: { code: string } }).activation?.code ?? '';
    assert.match(code, /^\d{6}$/);
    await page.click('[data-tab=pending]');
    const card = page.locator(`article.pending[data-device="${DEVICE['Device-Id']}"]`);
    await card.waitFor({ timeout: 10_000 });
    assert.equal((await card.locator('.code').textContent())?.replace(/\s/g, ''), code);
    assert.equal(await page.textContent('#pending-count'), '1');
    await fitsWidth(page);

    await card.locator('select.agent').selectOption('kitchen');
    await card.locator('button.bind').click();
    await page.locator('#notice', { hasText: 'Bound' }).waitFor();
    assert.equal(await agentOf(), 'kitchen');
    assert.equal(srv.app.devices?.isBound(DEVICE['Device-Id'], DEVICE['Client-Id']), true);

    // The device connects with the token OTA now gives it and talks to its agent.
    const ota = await fetch(`${srv.httpUrl}/xiaozhi/ota/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...DEVICE },
      body: JSON.stringify({
        version: 2,
        mac_address: DEVICE['Device-Id'],
        uuid: DEVICE['Client-Id'],
        application: { name: 'xiaozhi', version: '2.4.2' },
      }),
    });
    const token = ((await ota.json()) as { websocket?: { token?: string } }).websocket?.token ?? '';
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId: DEVICE['Device-Id'], clientId: DEVICE['Client-Id'], token });
    await dev.hello();
    assert.match(await ask(dev, 'what shall we bake'), /^You are a baker\./);

    // Moved to the other agent from the devices tab, while it is connected.
    await page.click('[data-tab=devices]');
    const row = page.locator(`article.device[data-device="${DEVICE['Device-Id']}"]`);
    await row.waitFor();
    assert.equal(await row.locator('select.agent').inputValue(), 'kitchen');
    await row.locator('select.agent').selectOption('bedroom');
    await page.locator('#notice', { hasText: 'now uses bedroom' }).waitFor();
    assert.equal(await agentOf(), 'bedroom');
    await fitsWidth(page);
    // Its next answer (same connection) uses the other agent's prompt.
    assert.match(await ask(dev, 'good night'), /^Speak softly\./);
    // Said from its card: the connected device speaks it now.
    await row.locator('input.say-text').fill('Time for bed.');
    await row.locator('button.say').click();
    await page.locator('#notice', { hasText: 'is saying it now' }).waitFor();
    await dev.waitFor('the text from the console spoken', () =>
      dev.json.some((j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start' && j.msg.text === 'Time for bed.'),
    );
    await fitsWidth(page);
    dev.close();

    // What the device remembers, on its card: its turns with both agents; deleted from there.
    const deviceId = DEVICE['Device-Id'];
    for (
      let i = 0;
      i < 100 && !(await srv.app.store.memory.history(deviceId, 10)).some((t) => t.text === 'good night');
      i++
    )
      await new Promise((r) => setTimeout(r, 50));
    // Turns of an earlier Client-Id of the same MAC (before a re-flash): moved to the current one from the card.
    const current = DEVICE['Client-Id'].toLowerCase();
    await srv.app.store.memory.addTurns([
      { deviceId, clientId: 'old-flash-client', agent: 'bedroom', role: 'user', text: 'before the re-flash' },
    ]);
    await row.locator('details.memory > summary').click();
    await row.locator('details.memory li[data-role=user]', { hasText: 'what shall we bake' }).waitFor();
    await row.locator('details.memory li[data-role=user]', { hasText: 'good night' }).waitFor();
    await fitsWidth(page);
    const move = row.locator('details.memory li[data-client="old-flash-client"] button.move-memory');
    await move.click();
    await move.click();
    await page.locator('#notice', { hasText: 'Moved the memory of old-flash-client' }).waitFor();
    assert.ok(
      (await srv.app.store.memory.history(deviceId, 10, current)).some((t) => t.text === 'before the re-flash'),
      'the current pair has it now',
    );
    assert.deepEqual(await srv.app.store.memory.history(deviceId, 10, 'old-flash-client'), []);
    await row.locator('details.memory li[data-client="old-flash-client"]').waitFor({ state: 'detached' });
    await row.locator('button.delete-memory').click();
    await row.locator('button.delete-memory').click();
    await page.locator('#notice', { hasText: 'Deleted the memory' }).waitFor();
    await row.locator('details.memory', { hasText: 'Nothing remembered.' }).waitFor();
    assert.deepEqual(await srv.app.store.memory.history(deviceId, 10), []);

    // Its reminders, on its card: listed with their text, cancelled from there.
    const dueMs = Date.now() + 3_600_000;
    await srv.app.store.reminders.add(
      { deviceId, clientId: DEVICE['Client-Id'], agent: 'bedroom', text: 'water the <b>plants</b>', dueMs },
      50,
    );
    await row.locator('details.reminders > summary').click();
    await row.locator('details.reminders li', { hasText: 'water the <b>plants</b>' }).waitFor();
    await fitsWidth(page);
    await row.locator('button.cancel-reminder').click();
    await row.locator('button.cancel-reminder').click();
    await page.locator('#notice', { hasText: 'Cancelled the reminder' }).waitFor();
    await row.locator('details.reminders', { hasText: 'No reminders.' }).waitFor();
    assert.deepEqual(await srv.app.store.reminders.list(deviceId), []);

    const shot = outputPath('admin-console-phone.png');
    mkdirSync(dirname(shot), { recursive: true });
    await page.screenshot({ path: shot, fullPage: true });

    // Signing out ends the session on the server: the cookie no longer opens the API.
    const cookie = (await page.context().cookies()).find((c) => c.name === 'xiaozhi_admin')?.value ?? '';
    await page.click('#sign-out');
    await page.locator('#sign-in').waitFor({ state: 'visible' });
    const signedOut = await fetch(`${srv.httpUrl}/api/admin/devices`, {
      headers: { cookie: `xiaozhi_admin=${cookie}` },
    });
    await signedOut.arrayBuffer();
    assert.equal(signedOut.status, 401);
    // The one refused sign-in is the only failed request Chromium reports; no CSP violation, no page error.
    assert.equal(errors.length, 1, errors.join('\n'));
    assert.match(errors[0] ?? '', /status of 401/);
  });

  test('a voice the form has no fields for is set as its JSON block; the card names the vendor and voice', async () => {
    await srv.app.store.agents.create('porch', { systemPrompt: 'Be brief.' });
    const { page, errors } = await openPage(browser, `${srv.httpUrl}/admin`, { viewport: PHONE, isMobile: true });
    await page.fill('#token', TOKEN);
    await page.click('#sign-in-form button[type=submit]');
    await page.locator('#console').waitFor({ state: 'visible' });
    await page.click('[data-tab=agents]');
    const porch = page.locator('details.agent[data-agent=porch]');
    await porch.locator(':scope > summary').click();
    await porch.locator('select[name=tts-provider]').selectOption('other');
    // A setting the form has no field for (espeak's pitch): any provider's options go this way.
    const json = porch.locator('textarea[name=tts-json]');
    await json.fill('{ "provider": "espeak", "voice": "en-gb", "pitch": 70 ');
    await porch.locator('button[type=submit]').click();
    await page.locator('#notice', { hasText: 'not valid JSON' }).waitFor();
    await json.fill('{ "provider": "espeak", "voice": "en-gb", "pitch": 70 }');
    await porch.locator('button[type=submit]').click();
    await page.locator('#notice', { hasText: 'Saved porch.' }).waitFor();
    const stored = await srv.app.store.agents.get('porch');
    const tts = stored?.settings.tts as Record<string, unknown> | undefined;
    assert.equal(tts?.provider, 'espeak');
    assert.equal(tts?.voice, 'en-gb');
    assert.equal(tts?.pitch, 70);
    await page.locator('details.agent[data-agent=porch] > summary', { hasText: 'voice: espeak en-gb' }).waitFor();
    await fitsWidth(page);
    assert.deepEqual(errors, []);
  });
  test('an agent switched to a realtime model in the console: the store has the pipeline and block, the key only stored; the card says so', async () => {
    await srv.app.store.agents.create('hall', { systemPrompt: 'Be brief.', llm: { model: 'chat-1' } });
    const { page, errors } = await openPage(browser, `${srv.httpUrl}/admin`, { viewport: PHONE, isMobile: true });
    await page.fill('#token', TOKEN);
    await page.click('#sign-in-form button[type=submit]');
    await page.locator('#console').waitFor({ state: 'visible' });
    await page.click('[data-tab=agents]');
    await page.locator('details.agent[data-agent=hall] > summary', { hasText: 'chat-1' }).waitFor();
    const hall = page.locator('details.agent[data-agent=hall]');
    await hall.locator(':scope > summary').click();
    assert.equal(await hall.locator('input[name=realtime-model]').isVisible(), false, 'hidden for the cascade');
    await hall.locator('select[name=pipeline]').selectOption('realtime');
    await hall.locator('select[name=realtime-dialect]').selectOption('qwen-omni');
    await hall.locator('input[name=realtime-baseURL]').fill('wss://dashscope.example/api-ws/v1');
    await hall.locator('input[name=realtime-apiKey]').fill('sk-console-realtime-key');
    await hall.locator('input[name=realtime-model]').fill('qwen3-omni-flash-realtime');
    await hall.locator('input[name=realtime-voice]').fill('Cherry');
    await hall.locator('textarea[name=realtime-instructions]').fill('Answer in one sentence.');
    await hall.locator('button[type=submit]').first().click();
    await page.locator('#notice', { hasText: 'Saved hall.' }).waitFor();
    const stored = await srv.app.store.agents.get('hall');
    assert.equal(stored?.settings.pipeline, 'realtime');
    const rt = stored?.settings.realtime as Record<string, unknown> | undefined;
    assert.deepEqual(
      [rt?.provider, rt?.dialect, rt?.baseURL, rt?.apiKey, rt?.model, rt?.voice, rt?.instructions],
      [
        'openai-realtime',
        'qwen-omni',
        'wss://dashscope.example/api-ws/v1',
        'sk-console-realtime-key',
        'qwen3-omni-flash-realtime',
        'Cherry',
        'Answer in one sentence.',
      ],
    );
    const card = page.locator('details.agent[data-agent=hall] > summary', {
      hasText: 'realtime: qwen3-omni-flash-realtime',
    });
    await card.waitFor();
    assert.match((await card.textContent()) ?? '', /key set/);
    assert.equal((await page.content()).includes('sk-console-realtime-key'), false, 'the key is never shown');

    // Another voice, the key left empty: kept.
    const again = page.locator('details.agent[data-agent=hall]');
    if ((await again.getAttribute('open')) === null) await again.locator(':scope > summary').click();
    await again.locator('input[name=realtime-voice]').fill('Chelsie');
    await again.locator('button[type=submit]').first().click();
    await page.locator('#notice', { hasText: 'Saved hall.' }).waitFor();
    const kept = (await srv.app.store.agents.get('hall'))?.settings.realtime as Record<string, unknown> | undefined;
    assert.equal(kept?.voice, 'Chelsie');
    assert.equal(kept?.apiKey, 'sk-console-realtime-key');
    await fitsWidth(page);
    assert.deepEqual(errors, []);
  });
});

/**
 * The console's camera parts, with the vision endpoint on and `vision.keepLast`: each agent card
 * names the model its photos go to (its own `vision` model, its chat model with `llm.images`, the
 * configured default); a device's kept photo shows in its card with the question and the answer,
 * and its delete button removes it (the admin API then answers 404). With the endpoint off, the
 * first describe's server: each agent's line says "camera: off".
 */
describe('admin console in Chromium: the camera', {
  skip: haveChromium ? false : 'needs Debian chromium at /usr/bin/chromium (apt-get install chromium)',
}, () => {
  const PHOTO = readFileSync(new URL('../fixtures/vision/photo.jpg', import.meta.url));
  const CAM = { deviceId: 'e4:00:00:00:00:41', clientId: '7c1d2e3f-0000-4000-8000-000000000041' };
  let llm: FakeOpenAi;
  let srv: VoiceApp;
  let off: VoiceApp;
  let browser: Browser;
  let dir: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'admin-console-vision-'));
    llm = await startFakeOpenAi();
    srv = await startVoiceApp(llm.url, {
      admin: { token: TOKEN },
      server: { dataDir: dir },
      vision: { enabled: true, baseURL: llm.url, model: 'default-eyes', keepLast: true },
      agents: [
        { name: 'plain' },
        { name: 'own', vision: { model: 'own-eyes' } },
        { name: 'seeing-chat', llm: { model: 'chat-with-eyes', images: true } },
      ],
    });
    off = await startVoiceApp(llm.url, { admin: { token: TOKEN }, agents: [{ name: 'blind' }] });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu'],
    });
  });
  after(async () => {
    await browser?.close();
    await srv?.close();
    await off?.close();
    await llm?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function signIn(url: string): Promise<{ page: Page; errors: string[] }> {
    const { page, errors } = await openPage(browser, `${url}/admin`, { viewport: PHONE, isMobile: true });
    await page.fill('#token', TOKEN);
    await page.click('#sign-in-form button[type=submit]');
    await page.locator('#console').waitFor({ state: 'visible' });
    return { page, errors };
  }

  const visionLine = (page: Page, agent: string) => page.locator(`.vision-line[data-agent="${agent}"]`);

  test("the agents tab names each agent's vision model, or says the camera is off", async () => {
    const { page, errors } = await signIn(srv.httpUrl);
    await page.click('[data-tab=agents]');
    for (const [agent, text] of [
      ['plain', 'camera: default-eyes (the configured vision model)'],
      ['own', 'camera: own-eyes (its own vision model)'],
      ['seeing-chat', 'camera: chat-with-eyes (its chat model)'],
    ] as const) {
      await visionLine(page, agent).filter({ hasText: text }).waitFor({ state: 'attached', timeout: 10_000 });
      assert.equal((await visionLine(page, agent).textContent())?.trim(), text, agent);
    }
    const other = await signIn(off.httpUrl);
    await other.page.click('[data-tab=agents]');
    await visionLine(other.page, 'blind')
      .filter({ hasText: 'camera: off' })
      .waitFor({ state: 'attached', timeout: 10_000 });
    assert.deepEqual([...errors, ...other.errors], []);
  });

  test("a device's kept photo shows in its card with the question and answer; its delete button removes it", async () => {
    // The device asks OTA (so the console lists it), connects with MCP and uploads a photo.
    const ota = await fetch(`${srv.httpUrl}/xiaozhi/ota/`, {
      method: 'POST',
      headers: { 'Device-Id': CAM.deviceId, 'Client-Id': CAM.clientId, 'Content-Type': 'application/json' },
      body: '{}',
    });
    assert.equal(ota.status, 200);
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId: CAM.deviceId, clientId: CAM.clientId, mcpTools: [] });
    try {
      await dev.hello({ mcp: true });
      await dev.waitFor('initialize', () => dev.mcpRequests.find((r) => r.method === 'initialize'));
      const init = dev.mcpRequests.find((r) => r.method === 'initialize');
      const vision = (init?.params as { capabilities: { vision: { url: string; token: string } } }).capabilities.vision;
      llm.script(fakeText('A small test card on a desk.'));
      const up = await uploadPhoto({ ...vision, ...CAM, question: 'What is on my desk?', file: PHOTO });
      assert.equal(up.status, 200);

      const { page, errors } = await signIn(srv.httpUrl);
      // Once the photo is deleted, the open section asks again and gets 404, its "none kept"
      // state, which Chromium logs as a failed load: those are expected, nothing else is.
      const notFound: string[] = [];
      page.on('response', (r) => {
        if (r.status() === 404) notFound.push(new URL(r.url()).pathname);
      });
      await page.click('[data-tab=devices]');
      const card = page.locator(`article.device[data-device="${CAM.deviceId}"]`);
      await card.locator('details.photo > summary').click();
      const img = card.locator('img.photo');
      await img.waitFor({ timeout: 10_000 });
      assert.equal(await img.getAttribute('src'), `data:image/jpeg;base64,${PHOTO.toString('base64')}`);
      assert.equal(
        await img.evaluate((i: HTMLImageElement) => i.complete && i.naturalWidth),
        320,
        'the photo is drawn',
      );
      await card.locator('.photo-body', { hasText: 'Asked: What is on my desk?' }).waitFor();
      await card.locator('.photo-body', { hasText: 'Answer: A small test card on a desk.' }).waitFor();
      await fitsPhone(page);

      const del = card.locator('button.delete-photo');
      await del.click();
      await del.filter({ hasText: 'Really delete?' }).waitFor();
      await del.click();
      await page.locator('#notice', { hasText: `Deleted the kept photo of ${CAM.deviceId}.` }).waitFor();
      await card.locator('.photo-body', { hasText: 'No photo kept' }).waitFor();
      assert.equal(await card.locator('img.photo').count(), 0);
      const gone = await fetch(`${srv.httpUrl}/api/admin/devices/${CAM.deviceId}/vision/last`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      assert.equal(gone.status, 404);
      const lastPath = `/api/admin/devices/${encodeURIComponent(CAM.deviceId)}/vision/last`;
      assert.ok(notFound.length > 0 && notFound.every((u) => u === lastPath), notFound.join(', '));
      const failedLoad = /^Failed to load resource: the server responded with a status of 404/;
      assert.equal(errors.filter((e) => failedLoad.test(e)).length, notFound.length);
      assert.deepEqual(
        errors.filter((e) => !failedLoad.test(e)),
        [],
      );
    } finally {
      dev.close();
    }
  });
});

async function fitsPhone(page: Page): Promise<void> {
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= PHONE.width, `page is ${width}px wide on a ${PHONE.width}px screen`);
}
