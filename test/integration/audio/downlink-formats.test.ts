/**
 * `SessionMedia.encode` with a format: a remote TTS's bytes as they came (PCM at another rate,
 * WAV, Ogg/Opus) are decoded or resampled where the encoder lives, on both engines alike, giving
 * the packets that decoding in this thread and encoding at the downlink rate gives; Ogg/Opus made
 * by another muxer (ffmpeg's libopus) decodes to the speech, with no process started; a stream
 * that cannot be read fails with `bad_input` and leaves the worker and the session working.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../../../core/logger.ts';
import { VoiceError } from '../../../core/errors.ts';
import { createMediaEngine } from '../../../audio/media/engine.ts';
import type { DownlinkFormat, MediaEngine, SessionMedia, SessionMediaOptions } from '../../../audio/media/media.ts';
import { ttsToPcm } from '../../../audio/tts/to-pcm.ts';
import { int16ToBuffer } from '../../../audio/pcm/pcm.ts';
import { encodeWav } from '../../../audio/pcm/wav.ts';
import { resample } from '../../../audio/pcm/resample.ts';
import { transcodeToPcm } from '../../../audio/ffmpeg/transcode.ts';
import { childProcesses, decodeDownlink } from '../../helpers/speech.ts';
import { speech24k, speechIn } from '../../fixtures/tts-speech.ts';
import { within } from '../../helpers/wait.ts';

const OPTS: SessionMediaOptions = {
  vad: { threshold: 0.5, minSilenceMs: 700, minSpeechMs: 250 },
  downlinkSampleRate: 24000,
  complexity: 5,
};
const TEXT = 'The quick brown fox jumps over the lazy dog.';
/** Odd sizes: pieces split samples, the WAV header and Ogg pages. */
const SIZES = [1, 7, 333, 4097, 45, 1000, 9999];
const never = (): AbortSignal => new AbortController().signal;

let inProcess: MediaEngine;
let workers: MediaEngine;
const sessions: SessionMedia[] = [];

before(async () => {
  const opts = {
    vadProvider: 'webrtc' as const,
    espeak: { voice: 'en-us' },
    espeakEngine: 'native' as const,
    log: silentLogger,
  };
  [inProcess, workers] = await Promise.all([
    createMediaEngine({ ...opts, workers: 0 }),
    createMediaEngine({ ...opts, workers: 1 }),
  ]);
});
after(async () => {
  for (const s of sessions) s.close();
  await Promise.all([inProcess?.close(), workers?.close()]);
});

/** A fresh session (a fresh encoder, so two runs can be compared packet for packet). */
async function open(engine: MediaEngine): Promise<SessionMedia> {
  const s = await engine.open(OPTS, silentLogger);
  sessions.push(s);
  return s;
}

async function* pieces(bytes: Buffer, sizes = SIZES): AsyncGenerator<Buffer> {
  let i = 0;
  for (let at = 0; at < bytes.length; i++) {
    const n = sizes[i % sizes.length] as number;
    yield bytes.subarray(at, at + n);
    at += n;
  }
}

async function collect(it: AsyncIterable<Buffer>): Promise<Buffer[]> {
  const out: Buffer[] = [];
  for await (const p of it) out.push(Buffer.from(p));
  return out;
}

function assertSamePackets(a: readonly Buffer[], b: readonly Buffer[], label: string): void {
  assert.equal(a.length, b.length, `${label}: packet count`);
  for (let i = 0; i < a.length; i++)
    assert.ok((a[i] as Buffer).equals(b[i] as Buffer), `${label}: packet ${i} differs`);
}

describe('encode with a format', () => {
  test('PCM at 22,050 Hz and WAV: the same packets on both engines as resampling here and encoding at 24 kHz', {
    timeout: 120_000,
  }, async () => {
    const at22k = resample(speech24k(TEXT), 24000, 22050);
    const cases: Array<[string, Buffer, DownlinkFormat]> = [
      ['pcm 22050', int16ToBuffer(at22k), { container: 'pcm', sampleRate: 22050 }],
      ['wav 22050', encodeWav(at22k, 22050), { container: 'wav' }],
    ];
    for (const [label, bytes, format] of cases) {
      const reference = await collect(
        (await open(inProcess)).encode(
          ttsToPcm(pieces(bytes), format, { sampleRate: 24000, signal: never() }),
          never(),
        ),
      );
      for (const engine of [inProcess, workers]) {
        const got = await within(collect((await open(engine)).encode(pieces(bytes), never(), format)), 30_000, label);
        assertSamePackets(reference, got, label);
      }
      assert.equal(
        reference.length,
        Math.ceil(resample(at22k, 22050, 24000).length / 1440),
        `${label}: every sample framed`,
      );
    }
  });

  test("Ogg/Opus from ffmpeg's libopus: decoded in the worker to the speech ffmpeg decodes, no process started", {
    timeout: 120_000,
  }, async () => {
    const ogg = speechIn('opus', TEXT);
    const spoken = speech24k(TEXT);
    const packets = await within(
      collect((await open(workers)).encode(pieces(ogg), never(), { container: 'ogg' })),
      30_000,
      'ogg',
    );
    assert.deepEqual(childProcesses(/ffmpeg/), [], 'no ffmpeg');
    const ours = await decodeDownlink(packets, 24000);
    assert.equal(ours.bad, 0);
    // Our length: the speech plus the Opus encoder's end padding (no end trimming) and our last frame's.
    const extra = ours.pcm.length - spoken.length;
    assert.ok(extra >= 0 && extra < 1440 + 960, `decoded ${ours.pcm.length} samples for ${spoken.length} spoken`);
    const ffmpeg: Int16Array[] = [];
    for await (const pcm of transcodeToPcm(ogg, { sampleRate: 24000, signal: never(), inputFormat: 'ogg' }))
      ffmpeg.push(pcm.slice());
    const ffmpegSamples = ffmpeg.reduce((n, p) => n + p.length, 0);
    assert.ok(Math.abs(ffmpegSamples - spoken.length) < 960, `ffmpeg decodes ${ffmpegSamples} samples`);
    const ref = await decodeDownlink(
      await collect(
        (await open(inProcess)).encode(
          (async function* () {
            yield* ffmpeg;
          })(),
          never(),
        ),
      ),
      24000,
    );
    assert.ok(
      Math.abs(ours.rms - ref.rms) / ref.rms < 0.1,
      `the same speech's level: ours ${ours.rms}, ffmpeg's ${ref.rms}`,
    );
  });

  test('a bad page, bytes that are not Ogg and a cut stream fail with bad_input; the worker and the session go on', {
    timeout: 120_000,
  }, async () => {
    const ogg = speechIn('opus', TEXT);
    const damaged = Buffer.from(ogg);
    damaged[ogg.length - 1]! ^= 0x55; // in the last page's body: its checksum fails
    const session = await open(workers);
    const cases: Array<[string, Buffer, RegExp]> = [
      ['damaged', damaged, /fails its checksum/],
      ['mp3 bytes', speechIn('mp3', TEXT), /no page at byte 0/],
      ['cut', ogg.subarray(0, ogg.length - 100), /ended inside a page/],
    ];
    for (const [label, bytes, pattern] of cases) {
      let packets = 0;
      await assert.rejects(
        async () => {
          for await (const _ of session.encode(pieces(bytes), never(), { container: 'ogg' })) packets++;
        },
        (e: unknown) => e instanceof VoiceError && e.code === 'bad_input' && pattern.test(e.message),
        label,
      );
      if (label === 'damaged') assert.ok(packets > 0, 'the audio before the bad page was sent');
    }
    const again = await collect(session.encode(pieces(ogg), never(), { container: 'ogg' }));
    assert.ok((await decodeDownlink(again, 24000)).rms > 300, 'the session still decodes Ogg');
    assert.equal(workers.stats().workerRestarts, 0, 'no worker died');
  });
});
