/**
 * The answer spoken through a voice that takes text in pieces (`TextStreamSpeech`), against an
 * in-test fake of our own interface (test/fixtures/fake-text-stream-tts.ts), on a manual clock:
 * the text reaches the vendor as it is written, captions go out with the frame of their
 * sentence's first sample, a flush ends one stream, an abort cancels it, a failure is reported
 * once, and a vendor faster than real time is read ahead only so far.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../../../core/logger.ts';
import type { SessionMedia } from '../../../audio/media/media.ts';
import type { TextStreamingTts, TtsStreamEvent } from '../../../audio/tts/tts.ts';
import { AudioOut } from '../../../voice/conversation/audio-out.ts';
import { boundedSpeech } from '../../../voice/conversation/speech.ts';
import { TextStreamSpeech } from '../../../voice/conversation/text-stream-speech.ts';
import type { DeviceChannel } from '../../../voice/session/channel.ts';
import { createLogger } from '../../../server/logger.ts';
import {
  createFakeTextStreamTts,
  levelOf,
  PEAK_FRAME,
  peakEncode,
  type FakeTextStreamTtsOptions,
} from '../../fixtures/fake-text-stream-tts.ts';
import { createLogSink } from '../../helpers/log-sink.ts';
import { ManualClock } from '../../helpers/manual-clock.ts';

const RATE = 24000;
const FRAME = PEAK_FRAME;

type Seen = { what: 'caption'; text: string } | { what: 'frame'; level: number } | { what: 'tts'; state: string };

function rig(fakeOpts: FakeTextStreamTtsOptions = {}, maxAheadBytes?: number) {
  const clock = new ManualClock();
  const seen: Seen[] = [];
  const onFrame: Array<() => void> = [];
  const channel: DeviceChannel = {
    sendJson: (m) => {
      if (m.type !== 'tts') return;
      if (m.state === 'sentence_start') seen.push({ what: 'caption', text: String(m.text) });
      else seen.push({ what: 'tts', state: m.state });
    },
    sendAudio: (p) => {
      seen.push({ what: 'frame', level: Buffer.from(p).readInt16LE(0) });
      for (const f of onFrame) f();
    },
    close: () => {},
    isOpen: true,
    bufferedBytes: 0,
  };
  const encodes: Array<{ format: unknown; chunks: string[] }> = [];
  const media = {
    encode: (audio: AsyncIterable<Int16Array | Uint8Array>, _signal: AbortSignal, format?: unknown) => {
      const call = { format, chunks: [] as string[] };
      encodes.push(call);
      return peakEncode(
        (async function* () {
          for await (const chunk of audio) {
            call.chunks.push(chunk instanceof Int16Array ? 'samples' : 'bytes');
            yield chunk;
          }
        })(),
      );
    },
  } as unknown as SessionMedia;
  const ac = new AbortController();
  const out = new AudioOut({
    channel,
    sessionId: 's',
    media,
    frameMs: 60,
    preBufferFrames: 3,
    sendAheadMs: 600,
    stopMarginMs: 0,
    signal: ac.signal,
    log: silentLogger,
    clock,
  });
  const fake = createFakeTextStreamTts({ msPerChar: 60, clock, ...fakeOpts });
  const marks = { firstText: 0, firstAudio: 0 };
  const speech = new TextStreamSpeech({
    tts: fake.tts,
    out,
    media,
    sampleRate: RATE,
    frameMs: 60,
    signal: ac.signal,
    log: silentLogger,
    onFirstText: () => marks.firstText++,
    onFirstAudio: () => marks.firstAudio++,
    ...(maxAheadBytes !== undefined ? { maxAheadBytes } : {}),
  });
  const frames = (): number[] => seen.flatMap((s) => (s.what === 'frame' ? [s.level] : []));
  const captions = (): string[] => seen.flatMap((s) => (s.what === 'caption' ? [s.text] : []));
  return { clock, seen, onFrame, out, ac, fake, speech, marks, frames, captions, encodes };
}

/** Lets the fake and the pump run (they need no clock time). */
const turns = async (n = 5): Promise<void> => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

const THREE = ['One two three.', 'Four five six seven.', 'Eight nine.'];

describe('text-stream speech', () => {
  test('the model text reaches the vendor as it is written, before its sentence ends', async () => {
    const r = rig();
    r.speech.write('Hello');
    r.speech.write(' there, my');
    assert.equal(r.fake.streams.length, 1, 'one stream opened at the first words');
    assert.equal(
      r.fake.streams[0]?.pushes.map((p) => p.text).join(''),
      'Hello there, ',
      'all but the word being written',
    );
    assert.equal(r.marks.firstText, 1);
    r.speech.write(' friend. How **are** you');
    assert.equal(r.fake.streams[0]?.pushes.map((p) => p.text).join(''), 'Hello there, my friend. How are ');
    await r.clock.run(r.speech.end(), 'the answer');
    const s = r.fake.streams[0];
    assert.equal(s?.pushes.map((p) => p.text).join(''), 'Hello there, my friend. How are you', 'markup removed');
    assert.ok(s?.finished && s.ended, 'finished, and its events ended');
    assert.equal(r.fake.open(), 0);
    assert.equal(r.marks.firstAudio, 1);
    assert.deepEqual(r.speech.errors, []);
    assert.equal(r.clock.pending, 0, 'no timer left');
  });

  test("the vendor's sentence marks go out with the first frame of their sentence", async () => {
    const r = rig();
    r.speech.write(THREE.join(' '));
    await r.clock.run(r.speech.end(), 'the answer');
    assert.deepEqual(r.captions(), THREE);
    assert.deepEqual(r.speech.spoken, THREE);
    // Each sentence lasts whole frames (60 ms per character): the frame after its caption is its first.
    const seq = r.seen.filter((s) => s.what !== 'tts');
    THREE.forEach((text, n) => {
      const at = seq.findIndex((s) => s.what === 'caption' && s.text === text);
      const next = seq[at + 1];
      assert.deepEqual(next, { what: 'frame', level: levelOf(n) }, `the frame after "${text}"`);
      const before = seq.slice(0, at).filter((s) => s.what === 'frame');
      assert.ok(
        before.every((f) => f.what === 'frame' && f.level < levelOf(n)),
        `no frame of "${text}" before it`,
      );
    });
    const total = THREE.reduce((a, t) => a + t.length, 0);
    assert.equal(r.frames().length, total, 'every frame of every sentence');
  });

  test('a vendor without marks: our own cut captions each sentence, at the first audio after it was pushed', async () => {
    const r = rig({ marks: false });
    for (const s of THREE) {
      r.speech.write(`${s} `);
      await turns();
    }
    await r.clock.run(r.speech.end(), 'the answer');
    assert.deepEqual(r.captions(), THREE);
    const seq = r.seen.filter((s) => s.what !== 'tts');
    THREE.forEach((text, n) => {
      const at = seq.findIndex((s) => s.what === 'caption' && s.text === text);
      const first = seq.findIndex((s) => s.what === 'frame' && s.level === levelOf(n));
      assert.ok(at < first, `"${text}" is shown before its audio`);
      if (n > 0) {
        const prev = seq.findIndex((s) => s.what === 'frame' && s.level === levelOf(n - 1));
        assert.ok(at > prev, `"${text}" is not shown before the previous sentence is heard`);
      }
    });
  });

  test("the vendor's PCM goes to the media worker as its bytes and rate: nothing is resampled or converted here", async () => {
    const r = rig();
    r.speech.write(THREE.join(' '));
    await r.clock.run(r.speech.end(), 'the answer');
    assert.ok(r.encodes.length >= 1, 'encoded');
    for (const e of r.encodes) {
      assert.deepEqual(e.format, { container: 'pcm', sampleRate: 24000 });
      assert.ok(e.chunks.length > 0 && e.chunks.every((c) => c === 'bytes'), e.chunks.join(','));
    }
  });

  test('a flush finishes the stream and waits for its audio; later text opens a new stream', async () => {
    const r = rig();
    r.speech.write('Let me look that up. ');
    await r.clock.run(r.speech.flush(), 'the flush');
    assert.equal(r.fake.streams.length, 1);
    assert.ok(r.fake.streams[0]?.finished && r.fake.streams[0].ended);
    assert.equal(r.frames().length, 'Let me look that up.'.length, 'all its frames were sent');
    r.speech.say('The track could not be played.');
    r.speech.write('Anything else?');
    assert.equal(r.fake.streams.length, 2, 'a new stream for the text after the flush');
    await r.clock.run(r.speech.end(), 'the answer');
    assert.deepEqual(r.speech.spoken, ['Let me look that up.', 'The track could not be played.', 'Anything else?']);
    assert.equal(r.fake.open(), 0);
  });

  test('an abort cancels the stream at once: no frame after it, no timer or stream left', async () => {
    const r = rig({ chunkMs: 60 });
    r.speech.write(Array.from({ length: 10 }, (_, i) => `This is sentence number ${i + 1}.`).join(' '));
    const done = r.speech.end();
    await r.clock.advance(600);
    const sent = r.frames().length;
    assert.ok(sent > 0, 'speaking');
    r.ac.abort();
    r.out.stop();
    await r.clock.run(done, 'the end after the abort');
    await r.clock.advance(5000);
    assert.equal(r.frames().length, sent, 'no frame after the abort');
    assert.ok(r.fake.streams[0]?.cancelled, 'the vendor was told');
    assert.equal(r.fake.open(), 0, 'its events ended');
    assert.deepEqual(r.speech.errors, [], 'an abort is no failure');
    assert.equal(r.clock.pending, 0, 'no timer left');
    r.speech.write('More text.');
    assert.equal(r.fake.streams.length, 1, 'nothing opened after the abort');
  });

  test('a stream failing mid-answer: what arrived is played, the failure reported once, nothing more sent', async () => {
    const r = rig({ failAfterSentences: 1 });
    r.speech.write(THREE.join(' '));
    await r.clock.run(r.speech.end(), 'the answer');
    await r.clock.advance(2000); // the frames the pacer had queued
    assert.equal(r.speech.failure?.code, 'provider_failed');
    assert.equal(r.speech.errors.length, 1);
    assert.deepEqual(r.speech.spoken, [THREE[0]]);
    assert.equal(r.frames().length, (THREE[0] as string).length, "the first sentence's audio was played");
    assert.equal(r.fake.open(), 0);
  });

  test('after a failure the rest of the answer goes to no vendor', async () => {
    const r = rig({ failAfterSentences: 0 });
    r.speech.write('First sentence. ');
    await r.clock.run(r.speech.flush(), 'the flush');
    assert.equal(r.speech.failure?.code, 'provider_failed');
    r.speech.write('Second sentence.');
    await r.clock.run(r.speech.end(), 'the answer');
    assert.equal(r.fake.streams.length, 1, 'no second stream');
    assert.equal(r.speech.errors.length, 1);
  });

  test('a stalled vendor (its timeout) fails the answer like a dropped one', async () => {
    const r = rig({ stallAfterSentences: 1, stallTimeoutMs: 50 });
    r.speech.write(THREE.join(' '));
    await r.clock.run(r.speech.end(), 'the answer');
    assert.equal(r.speech.failure?.code, 'timeout');
    assert.deepEqual(r.speech.spoken, [THREE[0]]);
  });

  test('a vendor faster than real time is read ahead only so far, and the text waits meanwhile', async () => {
    const bound = 48_000; // 1 s of 24 kHz PCM
    const sentence = (i: number): string => `Sentence ${i} is a rather long one to speak.`; // 2.6 s of audio
    const sentenceBytes = sentence(1).length * 0.06 * RATE * 2;
    const r = rig({}, bound);
    let worst = 0;
    r.onFrame.push(() => {
      const made = r.fake.streams.reduce((a, s) => a + s.audioBytes, 0);
      worst = Math.max(worst, made - r.frames().length * FRAME * 2);
    });
    r.speech.write(`${sentence(1)} `);
    await turns();
    r.speech.write(`${sentence(2)} `);
    await turns();
    assert.equal(
      r.fake.streams[0]?.pushes.map((p) => p.text).join(''),
      `${sentence(1)} `,
      'the second sentence waits: the first one is already far ahead',
    );
    for (let i = 3; i <= 5; i++) r.speech.write(`${sentence(i)} `);
    await r.clock.run(r.speech.end(), 'the answer');
    assert.deepEqual(r.speech.spoken, [1, 2, 3, 4, 5].map(sentence), 'everything is spoken, in order');
    // The bound, a sentence or two the vendor was given, and the pacer's own lead (10 + 4 frames);
    // all five sentences (5.9 s) would be made at once if the text did not wait.
    const allowed = bound + 2 * sentenceBytes + 14 * FRAME * 2;
    assert.ok(worst <= allowed, `at most ${allowed} bytes made ahead of playback, saw ${worst}`);
    assert.ok(worst > 0);
  });

  test('the answer is bounded: past maxAnswerChars nothing more is sent, with one warning', async () => {
    const r = rig();
    const logs = createLogSink();
    const log = createLogger({ level: 'warn', logContent: false, destination: logs.stream });
    const speech = boundedSpeech(r.speech, 30, log);
    speech.write('This answer goes on and on and on. ');
    speech.write('And on. ');
    speech.say('A note.');
    await r.clock.run(speech.end(), 'the answer');
    const sent = r.fake.streams.flatMap((s) => s.pushes.map((p) => p.text)).join('');
    assert.equal(sent, 'This answer goes on and on and');
    assert.equal(logs.find('answer too long to speak; the rest is not spoken (conversation.maxAnswerChars)').length, 1);
  });
});

test('a vendor sending a flood of sentence marks and little audio: bounded, the answer still ends', async () => {
  const r = rig();
  let marks = 0;
  const flood: TextStreamingTts = {
    ...r.fake.tts,
    openTextStream: () => ({
      push: () => {},
      finish: () => {},
      events: (async function* (): AsyncGenerator<TtsStreamEvent> {
        for (; marks < 20_000; marks++) yield { type: 'sentence', text: `mark ${marks}` };
        yield { type: 'audio', data: Buffer.alloc(2880 * 2) };
      })(),
    }),
  };
  const seen: string[] = [];
  const speech = new TextStreamSpeech({
    tts: flood,
    out: r.out,
    media: { encode: peakEncode } as unknown as SessionMedia,
    sampleRate: RATE,
    frameMs: 60,
    signal: r.ac.signal,
    log: silentLogger,
  });
  speech.write('Hello. ');
  await r.clock.run(speech.end(), 'the answer');
  for (const c of r.captions()) seen.push(c);
  assert.equal(marks, 20_000);
  assert.ok(seen.length <= 16, `${seen.length} captions sent at the first frame`);
  assert.equal(seen.at(-1), 'mark 19999', 'the last mark is the one shown');
  assert.equal(r.frames().length, 2);
});
