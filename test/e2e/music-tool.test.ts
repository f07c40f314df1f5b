/**
 * The built-in music tool (no MCP server): a file from the configured folder, an http URL on an
 * allowlisted host, refusal of other hosts, and abort stopping the download.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFile, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DeviceSim } from '../fixtures/device-sim.ts';
import { fakeToolCalls, startFakeOpenAi, type FakeOpenAi } from '../fixtures/fake-openai.ts';
import { startHttpFileServer, type HttpFileServer } from '../fixtures/http-file-server.ts';
import { decodedPcmBytes, makeToneMp3, removeDir, tempDir } from '../integration/examples/media-files.ts';
import { childProcesses, decodeDownlink } from '../helpers/speech.ts';
import { sleep, waitFor } from '../helpers/wait.ts';
import { startVoiceApp, type VoiceApp } from '../helpers/voice-app.ts';
import { closeAll } from '../helpers/close-all.ts';

describe('built-in music tool', () => {
  let llm: FakeOpenAi;
  let files: HttpFileServer;
  let srv: VoiceApp;
  let dir: string;
  let toneMs = 0;
  let longSize = 0;
  before(async () => {
    dir = await tempDir('music-tool-');
    const mp3 = join(dir, 'Evening Tone.mp3');
    await makeToneMp3(mp3, 3, 64);
    await copyFile(mp3, join(dir, 'Morning Bells.mp3'));
    // Four minutes at 256 kb/s (7.7 MB), served at 2 MB/s: a download that was not stopped would
    // still be running when the test looks. (Unthrottled, loopback socket buffers, which grow to
    // tens of MB, could take the whole file before the abort: a flake seen once in CI.)
    longSize = await makeToneMp3(join(dir, 'long.mp3'), 240, 256);
    const bytes = await readFile(mp3);
    toneMs = ((await decodedPcmBytes(bytes)) / 2 / 16000) * 1000;
    files = await startHttpFileServer({
      files: { '/song.mp3': bytes, '/long.mp3': { path: join(dir, 'long.mp3'), bytesPerSecond: 2_000_000 } },
    });
    llm = await startFakeOpenAi();
    srv = await startVoiceApp(llm.url, {
      tools: { music: { folder: dir, allowedHosts: [files.host], allowPrivateAddresses: true } },
    });
  });
  after(async () => {
    await closeAll(srv, llm, files);
    await removeDir(dir);
  });

  async function play(args: Record<string, unknown>): Promise<DeviceSim> {
    const dev = new DeviceSim({ url: srv.wsUrl });
    await dev.hello();
    llm.script(fakeToolCalls([{ name: 'play_music', arguments: args }]));
    dev.listen('detect', { text: 'play some music' });
    return dev;
  }

  test('plays the best match from the music folder', async () => {
    const dev = await play({ query: 'evening' });
    try {
      await dev.waitJson('tts', 'stop', 20_000);
      const caption = dev.json.find((j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start');
      assert.equal(caption?.msg.text, '♪ Evening Tone');
      const decoded = await decodeDownlink(dev.audio.map((a) => a.payload));
      assert.ok(Math.abs(decoded.ms - toneMs) / toneMs < 0.05, `${decoded.ms} vs ${toneMs}`);
    } finally {
      dev.close();
    }
  });

  test('plays an http URL from an allowed host', async () => {
    const dev = await play({ url: files.url('/song.mp3') });
    try {
      await dev.waitJson('tts', 'stop', 20_000);
      const decoded = await decodeDownlink(dev.audio.map((a) => a.payload));
      assert.ok(Math.abs(decoded.ms - toneMs) / toneMs < 0.05);
    } finally {
      dev.close();
    }
  });

  test('refuses other hosts and non-http schemes, and the model is told why', async () => {
    for (const url of ['http://169.254.169.254/latest/meta-data', 'file:///etc/passwd']) {
      const dev = await play({ url });
      try {
        await dev.waitJson('tts', 'stop', 20_000);
        assert.equal(dev.audio.length > 0, true, 'the model answered (spoken)');
        const tool = llm.requests.at(-1)?.body.messages.find((m) => m.role === 'tool');
        assert.match(
          String(tool?.content),
          /Cannot play that URL: (the host 169\.254\.169\.254 is not on the allowed list|only http and https)/,
        );
      } finally {
        dev.close();
      }
    }
  });

  test('abort stops the download and ffmpeg', async () => {
    const dev = await play({ url: files.url('/long.mp3') });
    try {
      await dev.waitFor('frames', () => dev.audio.length >= 10, 20_000);
      dev.abort();
      await dev.waitJson('tts', 'stop', 5000);
      await waitFor(() => childProcesses(/ffmpeg/).length === 0, { what: 'ffmpeg to exit' });
      const decoded = await decodeDownlink(dev.audio.map((a) => a.payload));
      assert.ok(decoded.ms < 10_000, 'stopped long before the end of the 4 min track');
      // The download itself stopped: the server saw the client go away mid-body, and sends no more.
      const download = files.requests.filter((r) => r.path === '/long.mp3').at(-1);
      assert.ok(download, 'the track was requested');
      await waitFor(() => download.closedEarly, {
        what: 'the download connection to close before the end',
        timeoutMs: 5000,
      });
      const sent = download.bytesSent;
      await sleep(500);
      assert.equal(download.bytesSent, sent, 'no bytes after the close');
      // Loopback socket buffers take several MB before backpressure reaches the server; what
      // matters is that the rest never left.
      assert.ok(sent < longSize, `only a part of the ${longSize}-byte track was sent (${sent})`);
    } finally {
      dev.close();
    }
  });
});
