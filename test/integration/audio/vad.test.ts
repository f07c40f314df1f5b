import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createVadModel, type VadEvent, type VadModel, type VadProvider } from '../../../audio/vad/vad.ts';
import { concatInt16 } from '../../../audio/pcm/pcm.ts';
import { audibleSpan, espeakPcm, flitePcm, makeTempDir, noise, silence } from '../../fixtures/audio/make-audio.ts';
import { resample } from '../../../audio/pcm/resample.ts';
import { FramedVadStream } from '../../../audio/vad/framed-stream.ts';

const RATE = 16000;
const tmp = makeTempDir();
let signal16k: Int16Array;
/** True speech spans (ms) in signal16k, from the clips' own audible parts. */
let truth: Array<[number, number]>;

before(() => {
  const a = flitePcm('what is the weather today', tmp.dir);
  const e = espeakPcm('please turn the volume up to fifty percent', tmp.dir);
  const b = resample(e.pcm, e.sampleRate, RATE);
  const parts: Int16Array[] = [silence(1000, RATE), a, silence(1500, RATE), b, silence(1200, RATE)];
  signal16k = concatInt16(parts);
  const spanA = audibleSpan(a, RATE);
  const spanB = audibleSpan(b, RATE);
  assert.ok(spanA && spanB);
  const offB = 1000 + (a.length * 1000) / RATE + 1500;
  truth = [
    [1000 + spanA[0], 1000 + spanA[1]],
    [offB + spanB[0], offB + spanB[1]],
  ];
});
after(() => tmp.cleanup());

async function runVad(model: VadModel, pcm: Int16Array, chunk = 960): Promise<VadEvent[]> {
  const stream = model.createStream({ threshold: 0.5, minSilenceMs: 500, minSpeechMs: 150 });
  const events: VadEvent[] = [];
  for (let at = 0; at < pcm.length; at += chunk) events.push(...(await stream.push(pcm.subarray(at, at + chunk))));
  stream.close();
  return events;
}

for (const provider of ['silero', 'webrtc'] as VadProvider[]) {
  describe(`vad ${provider}`, () => {
    let model: VadModel;
    before(async () => {
      model = await createVadModel({ provider });
    });
    after(async () => {
      await model.close();
    });

    test('finds speech start and end within 200 ms of the truth', async () => {
      const events = await runVad(model, signal16k);
      assert.equal(events.length, 4, JSON.stringify(events));
      const [s1, e1, s2, e2] = events;
      const check = (ev: VadEvent | undefined, type: VadEvent['type'], at: number): void => {
        assert.equal(ev?.type, type);
        assert.ok(Math.abs((ev?.atMs ?? 0) - at) <= 200, `${type} at ${ev?.atMs} ms, truth ${at} ms`);
      };
      check(s1, 'speech_start', truth[0]?.[0] ?? 0);
      check(e1, 'speech_end', truth[0]?.[1] ?? 0);
      check(s2, 'speech_start', truth[1]?.[0] ?? 0);
      check(e2, 'speech_end', truth[1]?.[1] ?? 0);
    });

    test('silence and near-silence never trigger speech', async () => {
      const quiet = concatInt16([
        silence(2000, RATE),
        noise(2000, RATE, 40),
        silence(1000, RATE),
        noise(1000, RATE, 150),
      ]);
      assert.deepEqual(await runVad(model, quiet), []);
    });

    test('rests the model through long pauses: silence is not scored, and speech after it is still found', async () => {
      const stream = model.createStream({ threshold: 0.5, minSilenceMs: 500, minSpeechMs: 150 });
      assert.ok(stream instanceof FramedVadStream);
      const pause = silence(5000, RATE);
      const events: VadEvent[] = [];
      for (let at = 0; at < pause.length; at += 960) events.push(...(await stream.push(pause.subarray(at, at + 960))));
      // ~0.25 s of the pause goes through the model (its state follows), the rest does not.
      const frameMs = (model.frameSamples * 1000) / RATE;
      assert.ok(stream.scored <= Math.ceil(250 / frameMs) + 1, `${stream.scored} frames of a 5 s pause scored`);
      for (let at = 0; at < signal16k.length; at += 960)
        events.push(...(await stream.push(signal16k.subarray(at, at + 960))));
      stream.close();
      assert.deepEqual(
        events.map((e) => e.type),
        ['speech_start', 'speech_end', 'speech_start', 'speech_end'],
      );
      const first = events[0];
      assert.ok(
        first && Math.abs(first.atMs - 5000 - (truth[0]?.[0] ?? 0)) <= 200,
        `speech after the pause starts at ${first?.atMs} ms`,
      );
    });

    test('one shared model serves interleaved streams independently', async () => {
      const a = model.createStream({ threshold: 0.5, minSilenceMs: 500, minSpeechMs: 150 });
      const b = model.createStream({ threshold: 0.5, minSilenceMs: 500, minSpeechMs: 150 });
      const quiet = silence(signal16k.length / 16, RATE); // 1/16 of the length, then speech for a only
      const evA: VadEvent[] = [];
      const evB: VadEvent[] = [];
      for (let at = 0; at < signal16k.length; at += 960) {
        const [ra, rb] = await Promise.all([
          a.push(signal16k.subarray(at, at + 960)),
          b.push(quiet.length > at ? quiet.subarray(at, at + 960) : new Int16Array(960)),
        ]);
        evA.push(...ra);
        evB.push(...rb);
      }
      assert.deepEqual(evA, await runVad(model, signal16k), 'same events as a stream of its own');
      assert.deepEqual(evB, []);
      a.reset();
      assert.equal(a.inSpeech, false);
      a.close();
      b.close();
    });
  });
}
