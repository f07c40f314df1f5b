/**
 * The server-wide bound on photos in flight (`vision.maxUploads`): each holds its photo (and, at
 * the model, its base64 copies) in memory for up to the model's timeout, so many devices sending
 * at once must not add up without end. Past the bound an upload is refused 503 before its body is
 * kept; the slot is given back however a photo ends (answered, timed out, abandoned).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { DeviceSim } from '../../fixtures/device-sim.ts';
import { fakeText, startFakeOpenAi, type FakeOpenAi } from '../../fixtures/fake-openai.ts';
import { startVoiceApp, type VoiceApp } from '../../helpers/voice-app.ts';
import { closeAll } from '../../helpers/close-all.ts';
import { waitFor } from '../../helpers/wait.ts';
import { uploadPhoto } from './camera-upload.ts';

const JPEG = readFileSync(new URL('../../fixtures/vision/photo.jpg', import.meta.url));

let llm: FakeOpenAi;
let srv: VoiceApp;
const devices: DeviceSim[] = [];
before(async () => {
  llm = await startFakeOpenAi();
  srv = await startVoiceApp(llm.url, {
    vision: {
      enabled: true,
      baseURL: llm.url,
      model: 'fake-vision',
      timeoutMs: 1500,
      imagesPerMinute: 60,
      maxUploads: 1,
    },
    server: { httpRequestTimeoutMs: 60_000 },
  });
});
after(async () => {
  for (const d of devices) d.close();
  await closeAll(srv, llm);
});

async function session(deviceId: string): Promise<{ url: string; token: string; deviceId: string }> {
  const dev = new DeviceSim({ url: srv.wsUrl, deviceId, clientId: `client-${deviceId}`, mcpTools: [] });
  devices.push(dev);
  await dev.hello({ mcp: true });
  await dev.waitFor('initialize', () => dev.mcpRequests.some((r) => r.method === 'initialize'));
  const init = dev.mcpRequests.find((r) => r.method === 'initialize');
  const vision = (init?.params as { capabilities: { vision: { url: string; token: string } } }).capabilities.vision;
  return { ...vision, deviceId };
}

const upload = (s: { url: string; token: string; deviceId: string }, signal?: AbortSignal) =>
  uploadPhoto({ url: s.url, token: s.token, deviceId: s.deviceId, file: JPEG, ...(signal ? { signal } : {}) });

test('past vision.maxUploads photos in flight, server-wide, another is refused 503; the slot comes back however a photo ends', async () => {
  const a = await session('70:00:00:00:02:01');
  const b = await session('70:00:00:00:02:02');
  const n = llm.requests.length;
  llm.script({ kind: 'hang' });
  const first = upload(a);
  await waitFor(() => llm.requests.length > n, { what: 'the first photo reached the model', timeoutMs: 5000 });
  const second = await upload(b);
  assert.equal(second.status, 503, JSON.stringify(second.body));
  assert.deepEqual(second.body, { success: false, message: 'busy with other photos: try again in a moment' });
  assert.equal((await first).status, 504, 'the first is answered by its own timeout');

  llm.script(fakeText('A desk.'));
  assert.equal((await upload(b)).status, 200, 'the slot of a timed-out photo came back');

  llm.script({ kind: 'hang' });
  const gone = new AbortController();
  const m = llm.requests.length;
  const abandoned = upload(a, gone.signal);
  await waitFor(() => llm.requests.length > m, { what: 'the photo reached the model', timeoutMs: 5000 });
  gone.abort();
  await abandoned;
  await llm.requests[m]?.finished;
  llm.script(fakeText('A chair.'));
  await waitFor(async () => (await upload(b)).status === 200, {
    what: 'the slot of an abandoned photo came back',
    timeoutMs: 5000,
  });
});
