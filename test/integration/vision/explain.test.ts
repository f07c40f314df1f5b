/**
 * The camera endpoint (`POST /mcp/vision/explain`) against the firmware's exact upload (a raw
 * chunked multipart sender), with the token a real device session is advertised in its MCP
 * initialize, and the fake OpenAI-compatible server as the vision model.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { DeviceSim } from '../../fixtures/device-sim.ts';
import { fakeError, fakeText, startFakeOpenAi, type FakeOpenAi } from '../../fixtures/fake-openai.ts';
import { startVoiceApp, type VoiceApp } from '../../helpers/voice-app.ts';
import { closeAll } from '../../helpers/close-all.ts';
import { waitFor } from '../../helpers/wait.ts';
import { uploadPhoto, type UploadOptions } from './camera-upload.ts';
import { corruptIdat, mangledScan, PNG, truncatedScan } from '../../fixtures/vision/broken-images.ts';
import { checkImage } from '../../../features/vision/image-check.ts';

const JPEG = readFileSync(new URL('../../fixtures/vision/photo.jpg', import.meta.url));
const MAX_IMAGE = 64 * 1024;
const ADMIN_TOKEN = 'admin-token-for-vision-tests';

describe('the vision endpoint', () => {
  let llm: FakeOpenAi;
  let srv: VoiceApp;
  const clock = { offset: 0 };
  const devices: DeviceSim[] = [];
  before(async () => {
    llm = await startFakeOpenAi();
    srv = await startVoiceApp(
      llm.url,
      {
        vision: {
          enabled: true,
          baseURL: llm.url,
          model: 'fake-vision',
          maxImageBytes: MAX_IMAGE,
          imagesPerMinute: 3,
          timeoutMs: 1500,
          uploadTimeoutMs: 1500,
          keepLast: true,
        },
        // Ours must be the deadline that answers a slow upload, not Node's.
        server: { httpRequestTimeoutMs: 60_000 },
        admin: { token: ADMIN_TOKEN },
        agents: [{ name: 'home' }, { name: 'office', llm: { model: 'chat-with-eyes', images: true } }],
      },
      undefined,
      { now: () => Date.now() + clock.offset },
    );
  });
  after(async () => {
    for (const d of devices) d.close();
    await closeAll(srv, llm);
  });

  /** A device session with MCP: the vision URL and token its initialize advertised. */
  async function session(deviceId: string): Promise<{ dev: DeviceSim; url: string; token: string }> {
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId, clientId: `client-${deviceId}`, mcpTools: [] });
    devices.push(dev);
    await dev.hello({ mcp: true });
    await dev.waitFor('initialize', () => dev.mcpRequests.some((r) => r.method === 'initialize'));
    const init = dev.mcpRequests.find((r) => r.method === 'initialize');
    const vision = (init?.params as { capabilities: { vision: { url: string; token: string } } }).capabilities.vision;
    return { dev, url: vision.url, token: vision.token };
  }

  const upload = (s: { url: string; token: string }, deviceId: string, more: Partial<UploadOptions> = {}) =>
    uploadPhoto({ url: s.url, token: s.token, deviceId, clientId: `client-${deviceId}`, file: JPEG, ...more });

  test('initialize advertises the endpoint at the Host the device used, with a token of its own', async () => {
    const a = await session('70:00:00:00:01:01');
    const b = await session('70:00:00:00:01:02');
    assert.equal(a.url, `${srv.httpUrl}/mcp/vision/explain`);
    assert.match(a.token, /^[A-Za-z0-9_-]{32}$/);
    assert.notEqual(a.token, b.token);
  });

  test('a photo is answered by the vision model, which gets it as an image part', async () => {
    const s = await session('70:00:00:00:01:03');
    const n = llm.requests.length;
    llm.script(fakeText('A test pattern with coloured bars.'));
    const r = await upload(s, '70:00:00:00:01:03', { question: 'What is on the table?' });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { success: true, action: 'RESPONSE', response: 'A test pattern with coloured bars.' });
    const req = llm.requests[n];
    assert.equal(req?.body.model, 'fake-vision');
    const parts = req?.body.messages[0]?.content;
    assert.ok(Array.isArray(parts));
    assert.deepEqual(parts[0], { type: 'text', text: 'What is on the table?' });
    assert.equal(parts[1]?.type, 'image_url');
    assert.equal(parts[1]?.image_url?.url, `data:image/jpeg;base64,${JPEG.toString('base64')}`);
    assert.ok(srv.logs.lines.some((l) => l.msg === 'vision answered' && l.sessionId !== undefined));
  });

  test('no token, a wrong one, another device’s, an expired one and an ended session’s: 401', async () => {
    const s = await session('70:00:00:00:01:04');
    const other = await session('70:00:00:00:01:05');
    const n = llm.requests.length;
    const cases: Array<[string, Promise<{ status: number; body: unknown }>]> = [
      ['no token', upload({ url: s.url, token: '' }, '70:00:00:00:01:04')],
      ['wrong token', upload({ url: s.url, token: 'x'.repeat(32) }, '70:00:00:00:01:04')],
      ["another device's token", upload({ url: s.url, token: other.token }, '70:00:00:00:01:04')],
    ];
    for (const [what, p] of cases) {
      const r = await p;
      assert.equal(r.status, 401, what);
      assert.deepEqual(r.body, { success: false, message: 'unauthorized' }, what);
    }
    const live = srv.app.registry.size;
    other.dev.close();
    await other.dev.closed;
    await waitFor(() => srv.app.registry.size === live - 1, { what: 'the session ended', timeoutMs: 5000 });
    const ended = await upload(other, '70:00:00:00:01:05');
    assert.equal(ended.status, 401, "an ended session's token");
    clock.offset += 2 * 3_600_000;
    try {
      const expired = await upload(s, '70:00:00:00:01:04');
      assert.equal(expired.status, 401);
      assert.deepEqual(expired.body, { success: false, message: 'vision token expired' });
    } finally {
      clock.offset = 0;
    }
    assert.equal(llm.requests.length, n, 'no model was asked');
  });

  test('a huge photo is cut off while it streams: 413 and the socket closed before the upload ended', async () => {
    const s = await session('70:00:00:00:01:06');
    const huge = Buffer.concat([JPEG.subarray(0, 100), Buffer.alloc(8 * 1024 * 1024, 0x55)]);
    const r = await upload(s, '70:00:00:00:01:06', { file: huge, chunkBytes: 16 * 1024 });
    assert.equal(r.status, 413);
    assert.deepEqual(r.body, { success: false, message: 'image too large' });
    assert.ok(r.cutShort, 'the server closed the socket before the client sent it all');
    // What the server read: the bound and one chunk past it, not the 8 MB (the client's kernel
    // buffers took more than that before the close reached it).
    const refused = srv.logs.lines.find((l) => l.msg === 'vision request refused' && l.status === 413);
    assert.ok(refused, 'the refusal is logged');
    assert.ok(Number(refused.bytesRead) < MAX_IMAGE + 128 * 1024, `read ${String(refused.bytesRead)}`);
  });

  test('a file that is no image, and one with only the magic bytes: 415', async () => {
    const s = await session('70:00:00:00:01:07');
    const text = await upload(s, '70:00:00:00:01:07', { file: Buffer.from('I am not a picture at all.') });
    assert.equal(text.status, 415);
    assert.match(String(text.body?.message), /not a usable image: not a JPEG or PNG/);
    const fake = await upload(s, '70:00:00:00:01:07', {
      file: Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(2000, 0x41)]),
    });
    assert.equal(fake.status, 415);
    assert.match(String(fake.body?.message), /corrupt JPEG/);
    const json = await upload(s, '70:00:00:00:01:07', { contentType: 'application/json' });
    assert.equal(json.status, 415);
  });

  test('a JPEG whose scan is mangled or cut, and a PNG whose IDAT is corrupt: 415, the headers being intact (ffmpeg decodes them)', async () => {
    const s = await session('70:00:00:00:01:0d');
    const n = llm.requests.length;
    for (const [what, file] of [
      ['mangled JPEG scan', mangledScan()],
      ['truncated JPEG scan', truncatedScan()],
      ['corrupt PNG IDAT', corruptIdat()],
    ] as const) {
      assert.equal(checkImage(file).ok, true, `${what}: the header check alone passes it`);
      const r = await upload(s, '70:00:00:00:01:0d', { file });
      assert.equal(r.status, 415, `${what}: ${r.status} ${JSON.stringify(r.body)}`);
      assert.deepEqual(r.body, { success: false, message: 'not a usable image: it does not decode' }, what);
    }
    assert.equal(llm.requests.length, n, 'no model was asked');
    assert.ok(
      srv.logs.lines.some((l) => l.msg === 'vision request refused' && l.status === 415 && l.decoder !== undefined),
      "ffmpeg's complaint is in the log",
    );
    // (another device: this one has spent its photos of the minute)
    const t = await session('70:00:00:00:01:0e');
    llm.script(fakeText('A PNG.'));
    const png = await upload(t, '70:00:00:00:01:0e', { file: PNG });
    assert.equal(png.status, 200, 'an intact PNG decodes and is sent on');
  });

  test('a slow upload (slowloris) gets 408 at the upload deadline and its socket closed', async () => {
    const s = await session('70:00:00:00:01:08');
    const r = await upload(s, '70:00:00:00:01:08', { chunkBytes: 64, chunkDelayMs: 100 });
    assert.equal(r.status, 408);
    assert.deepEqual(r.body, { success: false, message: 'upload too slow' });
    assert.ok(r.cutShort, 'closed before the slow client finished');
    // The deadline is 1.5 s; the whole trickle would take over 10 s.
    assert.ok(r.ms < 10_000, `${r.ms} ms`);
  });

  test('a vision model that fails is 502, one that does not answer in time 504', async () => {
    const s = await session('70:00:00:00:01:09');
    llm.script(fakeError(500, 'model crashed'));
    const failed = await upload(s, '70:00:00:00:01:09');
    assert.equal(failed.status, 502);
    assert.deepEqual(failed.body, { success: false, message: 'the vision model failed' });
    llm.script({ kind: 'hang' });
    const slow = await upload(s, '70:00:00:00:01:09');
    assert.equal(slow.status, 504);
    assert.deepEqual(slow.body, { success: false, message: 'the vision model did not answer in time' });
  });

  test('a device that goes away while the model thinks: the model request is dropped at once, nothing answered', async () => {
    const s = await session('70:00:00:00:01:0f');
    const n = llm.requests.length;
    llm.script({ kind: 'hang' });
    const gone = new AbortController();
    const r = upload(s, '70:00:00:00:01:0f', { signal: gone.signal });
    await waitFor(() => llm.requests.length > n, { what: 'the model was asked', timeoutMs: 5000 });
    gone.abort();
    assert.equal((await r).status, 0, 'no answer reached the device');
    const req = llm.requests[n];
    await req?.finished;
    assert.equal(req?.closedEarly, true, 'the model request was dropped');
    await waitFor(() => srv.logs.lines.some((l) => l.msg === 'vision request abandoned by the device'), {
      what: 'the abandon logged',
      timeoutMs: 5000,
    });
    assert.ok(
      !srv.logs.lines.some((l) => l.msg === 'vision model failed' && l.deviceId === '70:00:00:00:01:0f'),
      'the model was not waited for until its timeout',
    );
  });

  test('past imagesPerMinute a device gets 429; another device is not held up', async () => {
    const s = await session('70:00:00:00:01:0a');
    for (let i = 0; i < 3; i++) assert.equal((await upload(s, '70:00:00:00:01:0a')).status, 200, `photo ${i + 1}`);
    const over = await upload(s, '70:00:00:00:01:0a');
    assert.equal(over.status, 429);
    assert.match(String(over.body?.message), /at most 3 a minute/);
    const t = await session('70:00:00:00:01:0b');
    assert.equal((await upload(t, '70:00:00:00:01:0b')).status, 200);
  });

  test('the console sees each agent’s model and the kept photo, and deletes it', async () => {
    const admin = (method: string, path: string) =>
      fetch(`${srv.httpUrl}/api/admin${path}`, { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    const overview = (await (await admin('GET', '/vision')).json()) as Record<string, unknown>;
    assert.deepEqual(overview, {
      enabled: true,
      keepLast: true,
      default: { model: 'fake-vision', baseURL: llm.url, source: 'config' },
      agents: {
        home: { model: 'fake-vision', baseURL: llm.url, source: 'config' },
        office: { model: 'chat-with-eyes', baseURL: llm.url, source: 'chat' },
      },
    });
    const s = await session('70:00:00:00:01:0c');
    llm.script(fakeText('A cat on a sofa.'));
    assert.equal((await upload(s, '70:00:00:00:01:0c', { question: 'Who is there?' })).status, 200);
    const kept = await admin('GET', '/devices/70:00:00:00:01:0c/vision/last');
    assert.equal(kept.status, 200);
    const photo = (await kept.json()) as Record<string, unknown>;
    assert.equal(photo.base64, JPEG.toString('base64'));
    assert.equal(photo.question, 'Who is there?');
    assert.equal(photo.answer, 'A cat on a sofa.');
    assert.deepEqual([photo.width, photo.height, photo.mime], [320, 240, 'image/jpeg']);
    assert.equal((await admin('DELETE', '/devices/70:00:00:00:01:0c/vision/last')).status, 204);
    assert.equal((await admin('GET', '/devices/70:00:00:00:01:0c/vision/last')).status, 404);
  });
});
