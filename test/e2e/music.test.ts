/**
 * "Play some music" end to end: the fake LLM calls a music tool, the result is a ResourceLink, and
 * the server reads it in pages from the MCP server that produced it (both server styles: the
 * example server's resource template, and the mcp-go style `arguments`), transcodes with
 * ffmpeg and paces Opus frames to the device while later pages are still being read.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DeviceSim } from '../fixtures/device-sim.ts';
import { fakeToolCalls, startFakeOpenAi, type FakeOpenAi } from '../fixtures/fake-openai.ts';
import { startHttpFileServer, type HttpFileServer } from '../fixtures/http-file-server.ts';
import { decodedPcmBytes, makeToneMp3, removeDir, tempDir } from '../integration/examples/media-files.ts';
import { childProcesses, decodeDownlink } from '../helpers/speech.ts';
import { startVoiceApp, type VoiceApp } from '../helpers/voice-app.ts';
import { closeAll } from '../helpers/close-all.ts';
import { sleep } from '../helpers/wait.ts';

const PAGE = 8192;

describe('music from MCP servers, paged', () => {
  let llm: FakeOpenAi;
  let files: HttpFileServer;
  let srv: VoiceApp;
  let dir: string;
  /** A short and a long track, played whole; a huge one, aborted while it plays. */
  const tracks = {
    short: { seconds: 4, kbps: 64, size: 0, ms: 0 },
    long: { seconds: 10, kbps: 128, size: 0, ms: 0 },
    // For abort and read-while-playing: a long track at a high bitrate, so the read-ahead is short in time.
    huge: { seconds: 60, kbps: 320, size: 0, ms: 0 },
  };
  before(async () => {
    dir = await tempDir('music-');
    const served: Record<string, Buffer> = {};
    for (const [name, t] of Object.entries(tracks)) {
      const mp3 = join(dir, `${name}.mp3`);
      t.size = await makeToneMp3(mp3, t.seconds, t.kbps);
      if (t.size % PAGE === 0) throw new Error('test file size must not be a multiple of the page size');
      const bytes = await readFile(mp3);
      t.ms = ((await decodedPcmBytes(bytes)) / 2 / 16000) * 1000;
      served[`/${name}.mp3`] = bytes;
    }
    files = await startHttpFileServer({ files: served });
    llm = await startFakeOpenAi();
    const node = process.execPath;
    srv = await startVoiceApp(llm.url, {
      media: { pageSize: PAGE, pageTimeoutMs: 1500, retryDelayMs: 1000, maxTries: 3 },
      mcpServers: {
        audio: {
          command: node,
          args: [
            '--import',
            'tsx',
            'examples/mcp-audio-server/main.ts',
            '--stdio',
            '--urls',
            `Long Tone | ${files.url('/long.mp3')},Short Tone | ${files.url('/short.mp3')},Huge Tone | ${files.url('/huge.mp3')}`,
            '--allow-hosts',
            files.host,
          ],
        },
        mcpgo: {
          command: node,
          args: [
            '--import',
            'tsx',
            'test/fixtures/mcp-go-style-server.ts',
            '--track',
            `Go Tone|${files.url('/short.mp3')}`,
          ],
        },
        whole: {
          command: node,
          args: ['--import', 'tsx', 'test/fixtures/mcp-whole-resource-server.ts', '--url', files.url('/short.mp3')],
        },
      },
    });
  });
  after(async () => {
    await closeAll(srv, llm, files);
    await removeDir(dir);
  });

  const pages = (): number => files.requests.filter((r) => r.range !== undefined).length;

  for (const [style, tool, query, track] of [
    ['resource template (spec style)', 'audio__musicPlayer', 'long tone', tracks.long],
    ['arguments { url, start, end } (mcp-go style)', 'mcpgo__musicPlayer', 'tone', tracks.short],
  ] as const) {
    test(`plays a paged track: ${style}`, async () => {
      const size = track.size;
      const sourceMs = track.ms;
      const dev = new DeviceSim({ url: srv.wsUrl });
      try {
        await dev.hello();
        files.requests.length = 0;
        const n = llm.requests.length;
        llm.script(fakeToolCalls([{ name: tool, arguments: { query } }]));
        dev.listen('detect', { text: 'Play some music' });
        await dev.waitJson('tts', 'stop', 30_000);
        const caption = dev.json.find((j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start');
        assert.match(String(caption?.msg.text), /♪ .*Tone/);
        assert.equal(llm.requests.length, n + 1, 'playing audio ends the turn');
        const decoded = await decodeDownlink(dev.audio.map((a) => a.payload));
        assert.equal(decoded.bad, 0);
        assert.ok(
          Math.abs(decoded.ms - sourceMs) / sourceMs < 0.05,
          `decoded ${decoded.ms} ms vs source ${sourceMs} ms`,
        );
        assert.equal(pages(), Math.ceil(size / PAGE), 'one read per page, the last one short');
      } finally {
        dev.close();
      }
    });
  }

  test('a page that times out once is retried after about a second and the track completes', async () => {
    const dev = new DeviceSim({ url: srv.wsUrl });
    try {
      await dev.hello();
      files.requests.length = 0;
      files.options.faults = [{ start: 2 * PAGE, times: 1, kind: 'hang' }];
      llm.script(fakeToolCalls([{ name: 'audio__musicPlayer', arguments: { query: 'short tone' } }]));
      dev.listen('detect', { text: 'Play some music' });
      await dev.waitJson('tts', 'stop', 30_000);
      const sourceMs = tracks.short.ms;
      const hits = files.requests.filter((r) => r.range?.startsWith(`bytes=${2 * PAGE}-`));
      assert.equal(hits.length, 2, 'the hung page was asked for twice');
      const gap = (hits[1]?.at ?? 0) - (hits[0]?.at ?? 0);
      // Not before the page timeout (1.5 s) and the retry delay (1 s); a loaded machine may only
      // add to it (the exact schedule is checked on mocked time in the resource-stream unit test).
      assert.ok(gap > 2000, `retry after ${gap} ms`);
      const decoded = await decodeDownlink(dev.audio.map((a) => a.payload));
      assert.ok(Math.abs(decoded.ms - sourceMs) / sourceMs < 0.05, `complete: ${decoded.ms} ms vs ${sourceMs} ms`);
    } finally {
      files.options.faults = [];
      dev.close();
    }
  });

  test('an SDK-built server that ignores start/end: the track plays once, then tts stop', async () => {
    const dev = new DeviceSim({ url: srv.wsUrl });
    try {
      await dev.hello();
      files.requests.length = 0;
      llm.script(fakeToolCalls([{ name: 'whole__play', arguments: {} }]));
      dev.listen('detect', { text: 'Play the tone' });
      await dev.waitJson('tts', 'stop', 30_000);
      const decoded = await decodeDownlink(dev.audio.map((a) => a.payload));
      const sourceMs = tracks.short.ms;
      assert.ok(Math.abs(decoded.ms - sourceMs) / sourceMs < 0.05, `played once: ${decoded.ms} ms vs ${sourceMs} ms`);
      assert.equal(
        files.requests.filter((r) => r.path === '/short.mp3').length,
        1,
        'one resources/read, answered with the whole file',
      );
    } finally {
      dev.close();
    }
  });

  test('a page that always fails (a JSON-RPC error) ends the turn with a spoken error at once, not retried', async () => {
    const dev = new DeviceSim({ url: srv.wsUrl });
    try {
      await dev.hello();
      files.requests.length = 0;
      files.options.faults = [{ start: PAGE, times: Infinity, kind: 'error' }];
      llm.script(fakeToolCalls([{ name: 'audio__musicPlayer', arguments: { query: 'short tone' } }]));
      dev.listen('detect', { text: 'Play some music' });
      await dev.waitJson('tts', 'stop', 30_000);
      const said = dev.json
        .filter((j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start')
        .map((j) => String(j.msg.text));
      assert.ok(
        said.some((t) => /could not play/i.test(t)),
        `spoken: ${said.join(' | ')}`,
      );
      assert.equal(
        files.requests.filter((r) => r.range?.startsWith(`bytes=${PAGE}-`)).length,
        1,
        'the failing page was read once',
      );
    } finally {
      files.options.faults = [];
      dev.close();
    }
  });

  test('a page that never answers is retried per the rules (timeout, 1 s, three tries), then a spoken error', async () => {
    const dev = new DeviceSim({ url: srv.wsUrl });
    try {
      await dev.hello();
      files.requests.length = 0;
      files.options.faults = [{ start: PAGE, times: Infinity, kind: 'hang' }];
      llm.script(fakeToolCalls([{ name: 'audio__musicPlayer', arguments: { query: 'short tone' } }]));
      dev.listen('detect', { text: 'Play some music' });
      await dev.waitJson('tts', 'stop', 40_000);
      const said = dev.json
        .filter((j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start')
        .map((j) => String(j.msg.text));
      assert.ok(
        said.some((t) => /could not play/i.test(t)),
        `spoken: ${said.join(' | ')}`,
      );
      assert.equal(
        files.requests.filter((r) => r.range?.startsWith(`bytes=${PAGE}-`)).length,
        3,
        'the hung page was asked for three times',
      );
    } finally {
      files.options.faults = [];
      dev.close();
    }
  });

  test('abort mid-stream: frames stop, tts stop follows, reads stop, no ffmpeg left', async () => {
    const dev = new DeviceSim({ url: srv.wsUrl });
    try {
      await dev.hello();
      files.requests.length = 0;
      llm.script(fakeToolCalls([{ name: 'audio__musicPlayer', arguments: { query: 'huge tone' } }]));
      dev.listen('detect', { text: 'Play some music' });
      // About 7 s of playback: far less than the track, more than ffmpeg and the pipes read ahead
      // (some 150-200 KB, about 5 s of this 320 kb/s mp3).
      await dev.waitFor('some frames', () => dev.audio.length >= 117, 20_000);
      const firstFrameAt = dev.audio[0]?.at ?? Infinity;
      assert.ok(
        files.requests.some((r) => r.range !== undefined && r.at > firstFrameAt),
        'pages were still being read after the first frame was sent (playback starts before the stream is read)',
      );
      const abortAt = performance.now();
      dev.abort();
      const before = dev.json.length;
      await dev.waitJson('tts', 'stop', 5000, 0);
      const stopAt = dev.json.find((j) => j.msg.type === 'tts' && j.msg.state === 'stop')?.at ?? 0;
      const readsAtStop = pages();
      await sleep(1500);
      assert.equal(dev.audio.filter((a) => a.at > stopAt).length, 0, 'no frame after tts stop');
      assert.ok(dev.audio.filter((a) => a.at > abortAt).length <= 2, 'at most the frames in flight');
      assert.ok(pages() <= readsAtStop + 1, 'reads stopped');
      assert.ok(
        pages() < Math.ceil(tracks.huge.size / PAGE) / 2,
        `the track was not read to the end (${pages()} pages)`,
      );
      assert.equal(
        dev.json.slice(before).filter((j) => j.msg.type === 'tts' && j.msg.state === 'stop').length,
        1,
        'one tts stop for the abort',
      );
      assert.deepEqual(childProcesses(/ffmpeg/), []);
    } finally {
      dev.close();
    }
  });
});
