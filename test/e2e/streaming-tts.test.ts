/**
 * A voice that takes text in pieces, end to end: the real server (Opus in the media worker, the
 * pacer, the turn, the fake OpenAI-compatible model streaming its answer in small deltas) with an
 * injected in-process streaming voice (test/fixtures/fake-text-stream-tts.ts: real 24 kHz PCM
 * tones, sentence marks, faults on demand), and a WebSocket device:
 * - the model's words reach the voice before the model has finished its sentence;
 * - `sentence_start` goes out with its sentence's audio, and the audio decodes as Opus;
 * - `abort` from the device mid-answer cancels the voice's stream and stops the frames;
 * - a stream failing mid-answer: one apology, in the embedded voice; the next turn works;
 * - an answer past `conversation.maxAnswerChars` is cut, with a warning.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DeviceSim } from '../fixtures/device-sim.ts';
import { fakeText, startFakeOpenAi, type FakeOpenAi } from '../fixtures/fake-openai.ts';
import { startFakeOpenAiAudio, type FakeOpenAiAudio } from '../fixtures/fake-openai-audio.ts';
import {
  createFakeTextStreamTts,
  type FakeStreamRecord,
  type FakeTextStreamTtsOptions,
} from '../fixtures/fake-text-stream-tts.ts';
import { closeAll } from '../helpers/close-all.ts';
import { createLogSink } from '../helpers/log-sink.ts';
import { decodeDownlink } from '../helpers/speech.ts';
import { startVoiceApp, type VoiceApp } from '../helpers/voice-app.ts';
import { sleep } from '../helpers/wait.ts';

const MS_PER_CHAR = 50;
const MAX_ANSWER_CHARS = 120;

function sentences(dev: DeviceSim, from = 0): Array<{ text: string; at: number }> {
  return dev.json
    .slice(from)
    .filter((j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start')
    .map((j) => ({ text: String(j.msg.text), at: j.at }));
}

describe('a streaming voice end to end', () => {
  let llm: FakeOpenAi;
  let audio: FakeOpenAiAudio;
  let srv: VoiceApp;
  const fakeOpts: FakeTextStreamTtsOptions = { msPerChar: MS_PER_CHAR, firstAudioMs: 30 };
  const fake = createFakeTextStreamTts(fakeOpts);
  const logs = createLogSink();
  const last = (): FakeStreamRecord => fake.streams.at(-1) as FakeStreamRecord;

  before(async () => {
    llm = await startFakeOpenAi();
    // The configured voice names a remote provider (so the start-up check has one to reach); the
    // voice the server makes of it is the in-process stand-in.
    audio = await startFakeOpenAiAudio();
    srv = await startVoiceApp(
      llm.url,
      {
        tts: { provider: 'openai', baseURL: audio.baseURL, apiKey: 'sk-tts', model: 'tts-1', voice: 'alloy' },
        conversation: { maxAnswerChars: MAX_ANSWER_CHARS },
      },
      logs,
      { createTts: async () => fake.tts },
    );
  });
  after(async () => {
    await closeAll(srv, audio, llm);
  });

  test("the model's words reach the voice mid-sentence; captions go with their audio, which decodes", async () => {
    const dev = new DeviceSim({ url: srv.wsUrl });
    try {
      await dev.hello();
      const said = ['Hello there my good friend.', 'This is the second sentence.', 'And a third.'];
      llm.script(fakeText(said.join(' '), { chunkSize: 5, delayMs: 40 }));
      dev.listen('detect', { text: 'hello' });
      await dev.waitJson('tts', 'stop', 20_000);
      const s = last();
      const firstEnd = s.pushes.findIndex((p) => p.text.includes('.'));
      assert.ok(firstEnd > 2, `the first sentence came in ${firstEnd + 1} pushes`);
      assert.doesNotMatch(s.pushes[0]?.text ?? '', /\./, 'the first push is a fragment');
      assert.ok(
        (s.pushes[firstEnd]?.at ?? 0) - (s.pushes[0]?.at ?? 0) > 100,
        'the first words went out while the model was still writing the sentence',
      );
      assert.deepEqual(
        sentences(dev).map((c) => c.text),
        said,
      );
      // In step: the frames before each caption are those of the sentences before it (give or
      // take the few frames the pacer holds ready to send).
      const frameMs = 60;
      let before = 0;
      for (const c of sentences(dev)) {
        const seen = dev.audio.filter((a) => a.at < c.at).length;
        assert.ok(Math.abs(seen - before) <= 5, `"${c.text}": ${seen} frames before it, ${before} expected`);
        before += Math.ceil((said.find((t) => t === c.text)?.length ?? 0) * (MS_PER_CHAR / frameMs));
      }
      const decoded = await decodeDownlink(dev.audio.map((a) => a.payload));
      assert.equal(decoded.bad, 0, 'every packet decodes as Opus');
      const spokenMs = said.join('').length * MS_PER_CHAR;
      assert.ok(Math.abs(decoded.ms - spokenMs) <= 3 * frameMs * said.length, `${decoded.ms} ms of ${spokenMs} ms`);
      assert.ok(decoded.rms > 300, 'audible');
      const timing = logs.find('turn timings').at(-1);
      assert.equal(typeof timing?.firstSentenceMs, 'number');
      assert.equal(typeof timing?.ttsFirstAudioMs, 'number');
      assert.equal(fake.open(), 0);
    } finally {
      dev.close();
    }
  });

  test('abort mid-answer: the stream is cancelled, no frame after tts stop, the session goes on', async () => {
    const dev = new DeviceSim({ url: srv.wsUrl });
    try {
      await dev.hello();
      // Written slowly: the voice's stream is still open when the device aborts.
      llm.script(
        fakeText('This answer is long. It has several sentences. Each one takes a while. The end is far.', {
          chunkSize: 8,
          delayMs: 150,
        }),
      );
      dev.listen('detect', { text: 'tell me something long' });
      await dev.waitFor('speaking', () => dev.audio.length >= 10, 20_000);
      const abortAt = performance.now();
      dev.abort();
      const stop = await dev.waitFor(
        'tts stop',
        () => dev.json.find((j) => j.msg.type === 'tts' && j.msg.state === 'stop'),
        5000,
      );
      await sleep(1000);
      assert.equal(dev.audio.filter((a) => a.at > stop.at).length, 0, 'nothing after tts stop');
      assert.ok(dev.audio.filter((a) => a.at > abortAt).length <= srv.config.audio.preBufferFrames);
      assert.ok(last().cancelled, "the voice's stream was cancelled");
      assert.ok(llm.requests.at(-1)?.closedEarly, 'the model stream too');
      assert.equal(fake.open(), 0, 'no stream left open');
      const from = dev.json.length;
      llm.script(fakeText('Okay.'));
      dev.listen('detect', { text: 'never mind' });
      await dev.waitJson('tts', 'stop', 15_000, from);
      assert.deepEqual(
        sentences(dev, from).map((c) => c.text),
        ['Okay.'],
      );
    } finally {
      dev.close();
    }
  });

  test('a stream failing mid-answer: one apology in the embedded voice, and the next turn works', async () => {
    const dev = new DeviceSim({ url: srv.wsUrl });
    try {
      await dev.hello();
      const streamsBefore = fake.streams.length;
      fakeOpts.failAfterSentences = 1;
      llm.script(fakeText('The first part is fine. The second part breaks.'));
      dev.listen('detect', { text: 'go on' });
      await dev.waitJson('tts', 'stop', 20_000);
      fakeOpts.failAfterSentences = undefined;
      const apology = srv.config.conversation.apologies.tts;
      assert.deepEqual(
        sentences(dev).map((c) => c.text),
        ['The first part is fine.', apology],
      );
      assert.equal(fake.streams.length, streamsBefore + 1, 'the failed voice was not asked for the apology');
      const failed = logs.find('turn failed; apologising').at(-1);
      assert.equal(failed?.part, 'tts');
      const decoded = await decodeDownlink(dev.audio.map((a) => a.payload));
      assert.ok(decoded.ms > 1000 + 'The first part is fine.'.length * MS_PER_CHAR, 'the sentence, then the apology');
      assert.equal(fake.open(), 0);
      const from = dev.json.length;
      llm.script(fakeText('All good now.'));
      dev.listen('detect', { text: 'again' });
      await dev.waitJson('tts', 'stop', 15_000, from);
      assert.deepEqual(
        sentences(dev, from).map((c) => c.text),
        ['All good now.'],
      );
    } finally {
      fakeOpts.failAfterSentences = undefined;
      dev.close();
    }
  });

  test('an answer longer than conversation.maxAnswerChars: the rest is not sent to the voice, with a warning', async () => {
    const dev = new DeviceSim({ url: srv.wsUrl });
    try {
      await dev.hello();
      const long = Array.from({ length: 10 }, (_, i) => `Sentence ${i + 1} of a long answer.`).join(' ');
      assert.ok(long.length > 2 * MAX_ANSWER_CHARS);
      const warned = logs.find('answer too long to speak; the rest is not spoken (conversation.maxAnswerChars)').length;
      const streamsBefore = fake.streams.length;
      llm.script(fakeText(long, { chunkSize: 20, delayMs: 5 }));
      dev.listen('detect', { text: 'talk a lot' });
      await dev.waitJson('tts', 'stop', 30_000);
      // Everything the voice was given for this answer, in however many streams.
      const sent = fake.streams
        .slice(streamsBefore)
        .flatMap((st) => st.pushes.map((p) => p.text))
        .join('');
      assert.ok(sent.length <= MAX_ANSWER_CHARS, `${sent.length} characters sent`);
      assert.ok(long.startsWith(sent.trimEnd()), 'the start of the answer');
      assert.equal(
        logs.find('answer too long to speak; the rest is not spoken (conversation.maxAnswerChars)').length,
        warned + 1,
      );
    } finally {
      dev.close();
    }
  });
});
