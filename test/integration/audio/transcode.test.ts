import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { transcodeToPcm } from '../../../audio/ffmpeg/transcode.ts';
import { encodeWav } from '../../../audio/pcm/wav.ts';
import { VoiceError } from '../../../core/errors.ts';
import { audioChildren, makeTempDir, tone, waitForNoAudioChildren } from '../../fixtures/audio/make-audio.ts';
import { sleep } from '../../helpers/wait.ts';

const tmp = makeTempDir();
const files: Record<string, Buffer> = {};

before(() => {
  // 3 s 440 Hz tone at 44.1 kHz stereo → each container format ffmpeg must read.
  const wav = join(tmp.dir, 'tone.wav');
  execFileSync('ffmpeg', [
    '-loglevel',
    'error',
    '-f',
    'lavfi',
    '-i',
    'sine=frequency=440:sample_rate=44100:duration=3',
    '-ac',
    '2',
    wav,
  ]);
  for (const [ext, args] of [
    ['mp3', ['-codec:a', 'libmp3lame', '-b:a', '64k']],
    ['ogg', ['-codec:a', 'libopus', '-b:a', '32k']],
    ['m4a', ['-codec:a', 'aac', '-b:a', '64k']],
    ['flac', []],
  ] as const) {
    const out = join(tmp.dir, `tone.${ext}`);
    execFileSync('ffmpeg', ['-loglevel', 'error', '-i', wav, ...args, out]);
    files[ext] = readFileSync(out);
  }
  files['wav'] = readFileSync(wav);
});
after(() => tmp.cleanup());

async function* chunked(buf: Buffer, size = 4096, onRead?: (n: number) => void): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < buf.length; at += size) {
    onRead?.(at + size);
    yield buf.subarray(at, at + size);
  }
}

describe('ffmpeg transcoding', () => {
  for (const ext of ['mp3', 'ogg', 'm4a', 'flac', 'wav']) {
    test(`${ext} → s16le mono 16 kHz with the right duration`, async () => {
      const buf = files[ext];
      assert.ok(buf);
      let samples = 0;
      // m4a keeps its index at the end: it must be given as one buffer (ffmpeg seeks).
      const input = ext === 'm4a' ? buf : chunked(buf);
      for await (const pcm of transcodeToPcm(input, { sampleRate: 16000, signal: new AbortController().signal }))
        samples += pcm.length;
      assert.ok(Math.abs(samples / 16000 - 3) < 0.08, `${ext}: ${samples / 16000} s`);
    });
  }

  test('garbage input fails with a BadInput error naming ffmpeg’s complaint', async () => {
    const garbage = Buffer.from('this is definitely not audio '.repeat(200));
    await assert.rejects(
      async () => {
        for await (const _ of transcodeToPcm(garbage, { sampleRate: 16000, signal: new AbortController().signal }))
          void _;
      },
      (e: unknown) =>
        e instanceof VoiceError &&
        e.code === 'bad_input' &&
        /ffmpeg could not decode the input: .*Invalid data/i.test(e.message),
    );
    assert.deepEqual(await waitForNoAudioChildren(), []);
  });

  test('a failing input stream kills ffmpeg and surfaces the error', async () => {
    async function* broken(): AsyncGenerator<Uint8Array> {
      yield (files['mp3'] as Buffer).subarray(0, 2000);
      throw new Error('upstream died');
    }
    await assert.rejects(async () => {
      for await (const _ of transcodeToPcm(broken(), { sampleRate: 16000, signal: new AbortController().signal }))
        void _;
    }, /transcode input stream failed/);
    assert.deepEqual(await waitForNoAudioChildren(), []);
  });

  test('backpressure: a paused consumer stops ffmpeg from reading further input', async () => {
    // 60 s of raw PCM = 5.8 MB; far more than the pipes buffer.
    const big = encodeWav(tone(60_000, 48000, 300), 48000);
    let readUpTo = 0;
    const it = transcodeToPcm(
      chunked(big, 16384, (n) => (readUpTo = n)),
      { sampleRate: 48000, signal: new AbortController().signal },
    )[Symbol.asyncIterator]();
    await it.next();
    await sleep(300); // consumer pauses
    const whilePaused = readUpTo;
    await sleep(300);
    assert.equal(readUpTo, whilePaused, 'input not read while the consumer is paused');
    assert.ok(whilePaused < big.length / 2, `read ${whilePaused} of ${big.length} bytes while paused`);
    await it.return?.(undefined);
    assert.deepEqual(await waitForNoAudioChildren(), []);
  });

  test('abort mid-stream rejects at once and leaves no ffmpeg process', async () => {
    const ac = new AbortController();
    async function* stalled(): AsyncGenerator<Uint8Array> {
      yield* chunked((files['mp3'] as Buffer).subarray(0, 4000));
      await new Promise(() => {}); // input that never ends
    }
    let runningBeforeAbort = false;
    const timer = setTimeout(() => {
      runningBeforeAbort = audioChildren().some((c) => c.includes('ffmpeg'));
      ac.abort();
    }, 300);
    const started = performance.now();
    await assert.rejects(async () => {
      for await (const _ of transcodeToPcm(stalled(), { sampleRate: 16000, signal: ac.signal })) void _;
    }, /aborted/);
    clearTimeout(timer);
    assert.ok(runningBeforeAbort, 'ffmpeg was running before the abort');
    // The input never ends: any bound shows the abort ended it; a loaded machine may take a while.
    assert.ok(performance.now() - started < 10_000);
    assert.deepEqual(await waitForNoAudioChildren(), []);
  });

  test('a missing ffmpeg binary is a ProviderUnavailable error', async () => {
    await assert.rejects(
      async () => {
        for await (const _ of transcodeToPcm(Buffer.alloc(10), {
          sampleRate: 16000,
          signal: new AbortController().signal,
          ffmpegPath: 'ffmpeg-does-not-exist',
        }))
          void _;
      },
      (e: unknown) => e instanceof VoiceError && e.code === 'provider_unavailable',
    );
  });
});
