/**
 * Fault injection: the embedded TTS dying mid-sentence (its media worker thread
 * crashes: espeak-ng runs as WASM inside it, there is no TTS process), and ffmpeg fed garbage
 * (a "song" that is not audio). Defined outcomes: a session whose worker died is closed with 4006
 * (the device reconnects) and the worker is replaced, so a new device talks; garbage music is the
 * spoken playback error; nothing is left behind. The same crash with two workers (the other
 * worker's sessions unaffected) is in test/e2e/media-workers.test.ts; remote TTS bytes through ffmpeg
 * (garbage, a cut answer) are in tts-faults.test.ts.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Worker } from 'node:worker_threads';
import { CloseCode } from '../../protocol/close-codes.ts';
import { FaultRig } from './rig.ts';
import type { DeviceSim } from '../fixtures/device-sim.ts';
import { fakeText, fakeToolCalls } from '../fixtures/fake-openai.ts';
import { childProcesses } from '../helpers/speech.ts';
import { closeAll } from '../helpers/close-all.ts';
import { waitFor, within } from '../helpers/wait.ts';
import { untilWorkerIdle } from '../helpers/worker-idle.ts';
import { assertNoLeaks, holdings } from './leak-check.ts';

describe('fault: the media worker dies mid-sentence; ffmpeg is fed garbage', { timeout: 90_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'fault-music-'));
  const rig = new FaultRig('fa:00:00:00:04');
  const { server, fake, device } = rig;
  /** The media workers the server started, in order: the last one is running. */
  const mediaWorkers: Worker[] = [];

  async function quickTurn(dev: DeviceSim, answer: string): Promise<string[]> {
    const from = dev.json.length;
    fake().script(fakeText(answer));
    dev.listen('detect', { text: 'hi' });
    await dev.waitJson('tts', 'stop', 20_000, from);
    return dev.json
      .slice(from)
      .filter((j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start')
      .map((j) => String(j.msg.text));
  }

  before(
    async () => {
      // 64 KB of random bytes with an audio file's name: ffmpeg finds no stream it can decode.
      writeFileSync(join(dir, 'Noise Song.mp3'), randomBytes(64 * 1024));
      await rig.start(
        { audio: { workers: 1 }, tools: { music: { folder: dir } } },
        {
          onWorker: (w, label) => {
            if (label.startsWith('media worker')) mediaWorkers.push(w);
          },
        },
      );
    },
    { timeout: 60_000 },
  );

  after(async () => {
    try {
      await closeAll(rig.srv, rig.llm);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('the media worker (embedded TTS) crashes mid-sentence: 4006, the worker is replaced, a new device talks, no leak', async () => {
    const base = await holdings(server().app);
    const pool = server().deps.media;
    const restarts = pool.stats().workerRestarts;
    const dev = device();
    let fresh: DeviceSim | undefined;
    try {
      await within(dev.hello(), 20_000, 'hello');
      fake().script(fakeText(Array.from({ length: 6 }, (_, i) => `Sentence ${i + 1} of a long answer.`).join(' ')));
      dev.listen('detect', { text: 'tell me a long story' });
      await dev.waitFor('speaking', () => dev.audio.length >= 5, 15_000);
      const request = fake().requests.at(-1);
      // Killed between two pieces of its work (see `untilWorkerIdle`), the answer still playing.
      const worker = mediaWorkers.at(-1);
      assert.ok(worker);
      await untilWorkerIdle(worker);
      await worker.terminate();
      assert.equal(await within(dev.closed, 10_000, 'victim closed'), CloseCode.MediaLost);
      assert.equal(server().logs.find('media worker lost; ending the session').length, 1);
      await within(request?.finished ?? Promise.reject(new Error('no LLM request')), 5000, 'LLM exchange over');
      await waitFor(() => pool.stats().workers === 1 && pool.stats().workerRestarts === restarts + 1, {
        what: 'the replacement worker',
        timeoutMs: 30_000,
      });
      fresh = device();
      await within(fresh.hello(), 20_000, 'hello after the crash');
      assert.deepEqual(await quickTurn(fresh, 'Back again.'), ['Back again.']);
    } finally {
      dev.close();
      fresh?.close();
    }
    await within(fresh?.closed ?? Promise.resolve(0), 5000, 'fresh device closed');
    await assertNoLeaks(server().app, base);
  });

  test('ffmpeg fed a "song" that is not audio: the playback error is spoken, no ffmpeg left', async () => {
    const base = await holdings(server().app);
    const dev = device();
    try {
      await within(dev.hello(), 20_000, 'hello');
      const from = dev.json.length;
      fake().script(fakeToolCalls([{ name: 'play_music', arguments: { query: 'noise song' } }]));
      dev.listen('detect', { text: 'play the noise song' });
      await dev.waitJson('tts', 'stop', 20_000, from);
      const said = dev.json
        .slice(from)
        .filter((j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start')
        .map((j) => String(j.msg.text));
      assert.ok(
        said.some((t) => /could not play/i.test(t)),
        `spoken: ${said.join(' | ')}`,
      );
      assert.deepEqual(childProcesses(/ffmpeg/), []);
      assert.deepEqual(await quickTurn(dev, 'Still fine.'), ['Still fine.']);
    } finally {
      dev.close();
    }
    await within(dev.closed, 5000, 'device closed');
    await assertNoLeaks(server().app, base);
  });
});
