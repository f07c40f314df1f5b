/**
 * "What do you see?" on a camera board, end to end through the real server (issue 46): the
 * device's MCP `initialize` advertises the server's own `POST /mcp/vision/explain` with a token for
 * this session; a typed turn makes the fake chat model call the device's `self.camera.take_photo`;
 * the simulated firmware (test/fixtures/firmware, camera.ts) uploads a real JPEG there as
 * Esp32Camera::Explain does; the fake vision model gets it as an image part and answers; the
 * answer goes back to the chat model as the tool's result and is spoken (captions and Opus at the
 * device). Over WebSocket (the URL from the Host the device used) and over MQTT+UDP (the URL from
 * `server.publicWsUrl`, a forwarder in front of the server; without it, from the Host of the
 * device's OTA request).
 *
 * Bad input from the device: a made-up token, another device's token, the token of a session that
 * ended (401), a photo past `vision.maxImageBytes` (413), bytes that are no picture (415), an
 * upload slower than `vision.uploadTimeoutMs` (408), a vision model that fails (502). The firmware turns every answer but 200 into the error "Failed to upload
 * photo"; the model gets that as the tool's error result and says so, and the session goes on.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { DeviceSim } from '../fixtures/device-sim.ts';
import {
  fakeError,
  fakeText,
  fakeToolCalls,
  onImage,
  startFakeOpenAi,
  type FakeOpenAi,
  type FakeRequestView,
} from '../fixtures/fake-openai.ts';
import { CAMERA_ERRORS, type FirmwareCamera, TAKE_PHOTO_TOOL } from '../fixtures/firmware/camera.ts';
import { LOOPBACK_MQTT_CONFIG, SimFirmware } from '../fixtures/firmware/firmware.ts';
import type { FirmwareIdentity } from '../fixtures/firmware/ota.ts';
import { CAMERA_PHOTO, decodeJpegPixels, NOT_A_PHOTO, paddedJpeg } from '../fixtures/firmware/photos.ts';
import { attachFirmwareMcp, type WsFirmware } from '../fixtures/firmware/ws-device.ts';
import { decodeDownlink, utterancePackets } from '../helpers/speech.ts';
import { startVoiceApp, type VoiceApp } from '../helpers/voice-app.ts';
import { closeAll } from '../helpers/close-all.ts';
import { waitFor } from '../helpers/wait.ts';

/** The device tool as the chat model sees it (dots sanitized). */
const TOOL = 'self_camera_take_photo';
const QUESTION = 'What do you see?';
const SEEN = 'a test pattern with seven coloured bars';
const SAID_SEEN = `I see ${SEEN}.`;
const SAID_FAILED = 'Sorry, the camera could not send me its photo.';
const MAX_IMAGE_BYTES = 1_048_576;
/** Short, so the slow upload case is refused quickly; every other upload here takes milliseconds. */
const UPLOAD_TIMEOUT_MS = 2000;

type Json = Record<string, unknown>;

/** The captions of the sentences spoken since message `from`. */
function spoken(json: ReadonlyArray<{ msg: Json }>, from = 0): string {
  return json
    .slice(from)
    .filter((j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start')
    .map((j) => String(j.msg.text))
    .join(' ');
}

/** The tool results a chat request ends with (the ones the model is asked to observe now). */
function toolMessages(req: FakeOpenAi['requests'][number] | undefined): string[] {
  const msgs = req?.body.messages ?? [];
  let at = msgs.length;
  while (at > 0 && msgs[at - 1]?.role === 'tool') at--;
  return msgs.slice(at).map((m) => String(m.content));
}

/** The `vision` capability the server put in the device's `initialize`. */
function advertised(requests: ReadonlyArray<Json>): { url: string; token: string } {
  const init = requests.find((r) => r.method === 'initialize');
  const vision = ((init?.params as Json | undefined)?.capabilities as Json | undefined)?.vision as Json | undefined;
  assert.ok(vision, `initialize advertises vision: ${JSON.stringify(init)}`);
  assert.equal(typeof vision.url, 'string');
  assert.equal(typeof vision.token, 'string');
  return { url: String(vision.url), token: String(vision.token) };
}

/** The fake chat model and the fake vision model, with the rules this file's turns need. */
interface Models {
  chat: FakeOpenAi;
  vision: FakeOpenAi;
  /** What the vision model was shown, per request. */
  visionSeen: FakeRequestView[];
  /** The vision model answers 500 while true. */
  visionFails: boolean;
}

async function startModels(): Promise<Models> {
  const chat = await startFakeOpenAi();
  const vision = await startFakeOpenAi();
  const m: Models = { chat, vision, visionSeen: [], visionFails: false };
  // The chat model: asked to look, it calls the camera; given the camera's result, it speaks
  // the picture's description, or that the camera failed.
  chat.rule({
    when: (v) => v.toolResults.length === 0 && /what do you see/i.test(v.lastUserText) && v.toolNames.includes(TOOL),
    reply: (v) => fakeToolCalls([{ name: TOOL, arguments: { question: v.lastUserText } }]),
  });
  chat.rule({
    when: (v) => v.toolResults.length > 0,
    reply: (v) => {
      const text = v.toolResults.map((r) => r.content).join(' ');
      try {
        const body = JSON.parse(text) as { success?: boolean; response?: string };
        if (body.success === true && typeof body.response === 'string') return fakeText(`I see ${body.response}.`);
      } catch {
        // not the endpoint's JSON: an error result
      }
      return fakeText(SAID_FAILED);
    },
  });
  vision.rule(
    onImage((v) => {
      m.visionSeen.push(v);
      return m.visionFails ? fakeError(500, 'the vision model is down') : fakeText(SEEN);
    }),
  );
  return m;
}

function visionConfig(m: Models): Json {
  return {
    enabled: true,
    baseURL: m.vision.url,
    apiKey: '',
    model: 'vision-fake',
    maxImageBytes: MAX_IMAGE_BYTES,
    // This file's devices send more photos in a minute than the default allows; the per-minute
    // bound has its own test.
    imagesPerMinute: 600,
    uploadTimeoutMs: UPLOAD_TIMEOUT_MS,
  };
}

describe("the camera through the server's vision endpoint, end to end", { timeout: 240_000 }, () => {
  let models: Models;
  let chat: FakeOpenAi;
  let srv: VoiceApp;
  const closers: Array<{ close(): unknown }> = [];

  before(async () => {
    models = await startModels();
    ({ chat } = models);
    srv = await startVoiceApp(chat.url, { vision: visionConfig(models) });
  });
  after(async () => {
    await closeAll(...closers.reverse(), srv, models?.vision, models?.chat);
  });

  /** A camera board on WebSocket, its MCP session read (initialize, tools/list). */
  const wsCameraBoard = async (
    identity: FirmwareIdentity,
  ): Promise<{ dev: DeviceSim; fw: WsFirmware; camera: FirmwareCamera }> => {
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId: identity.deviceId, clientId: identity.clientId });
    const fw = attachFirmwareMcp(dev, { identity, camera: true });
    closers.push({ close: () => (fw.detach(), dev.close()) });
    await dev.hello({ mcp: true });
    await dev.waitFor('tools/list', () => fw.requests.find((r) => r.method === 'tools/list'), 10_000);
    return { dev, fw, camera: fw.camera as FirmwareCamera };
  };

  /** A typed turn ("listen detect" with text) on a WebSocket device: what was said and spoken. */
  const typedTurn = async (dev: DeviceSim, text: string): Promise<{ from: number; said: string }> => {
    const from = dev.json.length;
    dev.listen('detect', { text });
    await dev.waitJson('tts', 'sentence_start', 30_000, from);
    await dev.waitJson('tts', 'stop', 30_000, from);
    return { from, said: spoken(dev.json, from) };
  };

  test('WebSocket: "what do you see?" → take_photo → the device uploads to the advertised URL with its token → the vision model sees the JPEG → the answer is spoken', async () => {
    const identity = { deviceId: 'c0:ca:00:00:00:01', clientId: '5b7e9c1a-2d3f-4a5b-8c6d-7e8f9a0b1c2d' };
    const { dev, fw, camera } = await wsCameraBoard(identity);
    const ad = advertised(fw.requests);
    assert.equal(ad.url, `${srv.httpUrl}/mcp/vision/explain`, 'the URL of the Host the device used');
    assert.ok(ad.token.length >= 16, 'a token for this session');
    assert.equal(camera.explainUrl, ad.url, 'the firmware took the URL from initialize');
    assert.equal(camera.explainToken, ad.token);

    const n = chat.requests.length;
    const v = models.visionSeen.length;
    const framesFrom = dev.audio.length;
    const turn = await typedTurn(dev, QUESTION);

    const offered = (chat.requests[n]?.body.tools ?? []).map((t) => t.function.name);
    assert.ok(offered.includes(TOOL), `the camera is offered to the model: ${offered.join(', ')}`);
    const call = fw.requests.find((r) => r.method === 'tools/call');
    assert.deepEqual(call?.params, { name: TAKE_PHOTO_TOOL, arguments: { question: QUESTION } });

    const upload = camera.uploads.at(-1);
    assert.equal(upload?.url, ad.url);
    assert.equal(upload?.status, 200);
    assert.equal(upload?.photoBytes, CAMERA_PHOTO.length);
    assert.deepEqual(JSON.parse(upload?.body ?? ''), { success: true, action: 'RESPONSE', response: SEEN });

    assert.equal(models.visionSeen.length, v + 1, 'one vision request');
    const image = models.visionSeen[v]?.images[0];
    assert.equal(image?.mimeType, 'image/jpeg');
    assert.deepEqual(image?.bytes, CAMERA_PHOTO, 'the JPEG reached the vision model byte for byte');
    assert.equal(await decodeJpegPixels(image?.bytes ?? Buffer.alloc(0)), 160 * 120);
    assert.ok(
      JSON.stringify(models.visionSeen[v]?.body.messages).includes(QUESTION),
      "the device's question went with the photo",
    );

    assert.deepEqual(toolMessages(chat.requests.at(-1)), [upload?.body], 'the tool result is the body the device got');
    assert.equal(turn.said, SAID_SEEN);
    const heard = await decodeDownlink(dev.audio.slice(framesFrom).map((a) => a.payload));
    assert.equal(heard.bad, 0);
    assert.ok(heard.ms > 800 && heard.rms > 300, `the answer is heard as speech: ${heard.ms} ms, rms ${heard.rms}`);
  });

  test('WebSocket, bad input from the device: each refusal is a tool error the model explains aloud, and the session goes on', async () => {
    const identity = { deviceId: 'c0:ca:00:00:00:02', clientId: '6c8f0d2b-3e4a-4b5c-9d7e-8f9a0b1c2d3e' };
    const { dev, fw, camera } = await wsCameraBoard(identity);
    const own = advertised(fw.requests);
    const other = await wsCameraBoard({
      deviceId: 'c0:ca:00:00:00:03',
      clientId: '7d9a1e3c-4f5b-4c6d-8e8f-9a0b1c2d3e4f',
    });
    const ended = await wsCameraBoard({
      deviceId: 'c0:ca:00:00:00:04',
      clientId: '8e0b2f4d-5a6c-4d7e-9f9a-0b1c2d3e4f5a',
    });
    const endedToken = ended.camera.explainToken;
    const sessions = srv.app.registry.size;
    ended.fw.detach();
    ended.dev.close();
    await ended.dev.closed;
    await waitFor(() => srv.app.registry.size === sessions - 1, { what: 'the ended session gone', timeoutMs: 10_000 });

    const cases: Array<{ what: string; status: number; arrange: () => void }> = [
      { what: 'a made-up token', status: 401, arrange: () => camera.setExplainUrl(own.url, 'not-a-token-we-gave') },
      {
        what: "another device's token",
        status: 401,
        arrange: () => camera.setExplainUrl(own.url, other.camera.explainToken),
      },
      {
        what: 'the token of a session that ended',
        status: 401,
        arrange: () => camera.setExplainUrl(own.url, endedToken),
      },
      {
        what: 'a photo past maxImageBytes',
        status: 413,
        arrange: () => {
          camera.setExplainUrl(own.url, own.token);
          camera.photo = paddedJpeg(MAX_IMAGE_BYTES + 256 * 1024);
        },
      },
      { what: 'bytes that are no picture', status: 415, arrange: () => (camera.photo = NOT_A_PHOTO) },
      {
        what: 'an upload slower than uploadTimeoutMs',
        status: 408,
        arrange: () => {
          camera.photo = CAMERA_PHOTO;
          // Four pieces, a second apart after the first: past the 2 s the whole upload may take.
          camera.chunkDelayMs = 1000;
        },
      },
      {
        what: 'a vision model that fails',
        status: 502,
        arrange: () => {
          camera.chunkDelayMs = 0;
          models.visionFails = true;
        },
      },
    ];
    try {
      for (const c of cases) {
        c.arrange();
        const n = chat.requests.length;
        const u = camera.uploads.length;
        const turn = await typedTurn(dev, QUESTION);
        const upload = camera.uploads[u];
        assert.equal(upload?.status, c.status, `${c.what}: HTTP ${upload?.status} ${upload?.body}`);
        assert.equal(JSON.parse(upload?.body ?? '{}').success, false, `${c.what}: the endpoint's error shape`);
        assert.equal(typeof JSON.parse(upload?.body ?? '{}').message, 'string', `${c.what}: with a message`);
        const results = toolMessages(chat.requests.at(-1));
        assert.equal(chat.requests.length, n + 2, `${c.what}: the model was asked again with the result`);
        assert.equal(results.length, 1);
        assert.match(
          results[0] ?? '',
          new RegExp(CAMERA_ERRORS.upload),
          `${c.what}: the firmware's error reached the model`,
        );
        assert.equal(turn.said, SAID_FAILED, `${c.what}: the outcome is spoken`);
        assert.equal(dev.closeCode, null, `${c.what}: the session stays up`);
      }
    } finally {
      models.visionFails = false;
      camera.chunkDelayMs = 0;
      camera.photo = CAMERA_PHOTO;
      camera.setExplainUrl(own.url, own.token);
    }
    // The same session, its own token again: it sees.
    const after = await typedTurn(dev, QUESTION);
    assert.equal(after.said, SAID_SEEN);
    assert.equal(camera.uploads.at(-1)?.status, 200);
  });
});

/**
 * A camera board on MQTT+UDP: OTA at `otaUrl`, then MQTT and the audio channel; its `initialize`
 * read; then a spoken-to "what do you see?" turn whose photo goes where it was advertised. Returns
 * the advertised URL for the caller to check; the turn's outcome is asserted here.
 */
async function mqttCameraTurn(
  models: Models,
  otaUrl: string,
  identity: FirmwareIdentity,
  closers: Array<{ close(): unknown }>,
): Promise<{ url: string }> {
  const { chat } = models;
  const fw = new SimFirmware({ otaUrl, identity, camera: true });
  closers.push(fw);
  const camera = fw.camera as FirmwareCamera;
  await fw.checkVersion();
  await fw.openAudioChannel();
  const mcp = (): Json[] =>
    fw.json.filter((j) => j.msg.type === 'mcp').map((j) => (j.msg.payload as Json | undefined) ?? {});
  await fw.waitFor('tools/list', () => mcp().find((p) => p.method === 'tools/list'), 10_000);
  const ad = advertised(mcp());
  assert.equal(camera.explainUrl, ad.url);

  const silence = await utterancePackets(new Int16Array(16000 * 30), 100, 100);
  const n = chat.requests.length;
  const v = models.visionSeen.length;
  const from = fw.json.length;
  const framesFrom = fw.audio.length;
  fw.listenStart('auto');
  // The device listens (its audio flowing) before the typed question: the server takes its
  // address for the downlink only from a run of datagrams, as from a device that is listening.
  const sending = fw.sendPaced(silence, () => fw.json.slice(from).some((j) => j.msg.type === 'tts'));
  await fw.waitFor('the device to be listening a while', () => fw.uplinkSequence >= 10, 10_000);
  fw.wakeWordDetected(QUESTION);
  await fw.waitJson('tts', 'sentence_start', 30_000, from);
  await fw.waitJson('tts', 'stop', 30_000, from);
  await sending;

  assert.ok((chat.requests[n]?.body.tools ?? []).some((t) => t.function.name === TOOL));
  const upload = camera.uploads.at(-1);
  assert.equal(upload?.url, ad.url, 'uploaded where it was advertised');
  assert.equal(upload?.status, 200, `upload: ${upload?.status} ${upload?.body}`);
  assert.deepEqual(models.visionSeen[v]?.images[0]?.bytes, CAMERA_PHOTO);
  assert.deepEqual(toolMessages(chat.requests.at(-1)), [upload?.body]);
  assert.equal(spoken(fw.json, from), SAID_SEEN);
  const played = await fw.decodePlayed(framesFrom);
  assert.ok(played.bad === 0 && played.ms > 800 && played.rms > 300, `heard: ${JSON.stringify(played)}`);
  return { url: ad.url };
}

/**
 * Over MQTT the session has no HTTP request of its own: `server.publicWsUrl`, when set, names the
 * host (here a TCP forwarder in front of the server, as a reverse proxy would be) and wins over the
 * Host of the device's OTA request (made to the server directly here).
 */
describe('the camera over MQTT+UDP, the URL from publicWsUrl', { timeout: 240_000 }, () => {
  let models: Models;
  let srv: VoiceApp;
  let front: { port: number; close(): Promise<void> };
  let target = 0;
  const closers: Array<{ close(): unknown }> = [];

  before(async () => {
    models = await startModels();
    front = await startForwarder(() => target);
    srv = await startVoiceApp(models.chat.url, {
      ...LOOPBACK_MQTT_CONFIG,
      server: { publicWsUrl: `ws://127.0.0.1:${front.port}/xiaozhi/v1/` },
      vision: visionConfig(models),
    });
    target = Number(new URL(srv.httpUrl).port);
  });
  after(async () => {
    await closeAll(...closers.reverse(), srv, front, models?.vision, models?.chat);
  });

  test('MQTT+UDP: the simulated firmware\'s camera answers "what do you see?" and the answer is heard', async () => {
    const identity = { deviceId: 'c0:ca:00:00:01:01', clientId: '9f1c3a5e-6b7d-4e8f-8a0b-1c2d3e4f5a6b' };
    const { url } = await mqttCameraTurn(models, `${srv.httpUrl}/xiaozhi/ota/`, identity, closers);
    assert.equal(url, `http://127.0.0.1:${front.port}/mcp/vision/explain`, "publicWsUrl's host, not OTA's");
  });
});

/**
 * Without `server.publicWsUrl`, an MQTT session is advertised the scheme and Host of its device's
 * latest OTA request (the firmware asks OTA over HTTP at every boot, before MQTT): here OTA goes
 * through a TCP forwarder, so the URL can only have come from that request (a stranger's OTA
 * request naming a host that is not the server's is not remembered: test/unit/features/identity/ota-reached.test.ts).
 */
describe('the camera over MQTT+UDP without publicWsUrl, the URL from the OTA Host', { timeout: 240_000 }, () => {
  let models: Models;
  let srv: VoiceApp;
  let front: { port: number; close(): Promise<void> };
  let target = 0;
  const closers: Array<{ close(): unknown }> = [];

  before(async () => {
    models = await startModels();
    front = await startForwarder(() => target);
    srv = await startVoiceApp(models.chat.url, { ...LOOPBACK_MQTT_CONFIG, vision: visionConfig(models) });
    target = Number(new URL(srv.httpUrl).port);
  });
  after(async () => {
    await closeAll(...closers.reverse(), srv, front, models?.vision, models?.chat);
  });

  test("MQTT+UDP: the vision URL is built from the device's OTA Host, and the photo uploaded there is answered", async () => {
    const identity = { deviceId: 'c0:ca:00:00:01:02', clientId: '0a2d4b6f-7c8e-4f9a-8b1c-2d3e4f5a6b7c' };
    const { url } = await mqttCameraTurn(models, `http://127.0.0.1:${front.port}/xiaozhi/ota/`, identity, closers);
    assert.equal(url, `http://127.0.0.1:${front.port}/mcp/vision/explain`, "the host of the device's OTA request");
    assert.equal(srv.logs.find('vision: no URL to advertise to an MQTT session').length, 0);
  });
});

/** A TCP forwarder on a loopback port to `to()`'s port (bound before the server it fronts). */
async function startForwarder(to: () => number): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((inbound) => {
    const outbound = net.connect({ host: '127.0.0.1', port: to() });
    for (const s of [inbound, outbound]) {
      sockets.add(s);
      s.on('error', () => {
        inbound.destroy();
        outbound.destroy();
      });
      s.on('close', () => sockets.delete(s));
    }
    inbound.pipe(outbound).pipe(inbound);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
