/**
 * Silero steps of concurrent streams run as one batch (audio/vad/silero-batch.ts), on the real
 * model: fewer model runs than steps, and every stream gets exactly what it gets alone.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { concatInt16, int16ToFloat32 } from '../../../audio/pcm/pcm.ts';
import { resample } from '../../../audio/pcm/resample.ts';
import { createSileroModel, type SileroVadModel } from '../../../audio/vad/silero.ts';
import { STEP_INPUT, STEP_STATE } from '../../../audio/vad/silero-batch.ts';
import type { VadEvent } from '../../../audio/vad/vad.ts';
import { espeakPcm, flitePcm, makeTempDir, noise, silence } from '../../fixtures/audio/make-audio.ts';
import { sleep } from '../../helpers/wait.ts';

const RATE = 16000;
const STREAMS = 6;
const tmp = makeTempDir();
let model: SileroVadModel;
/** One signal per stream: the same speech behind different lead-ins, at different levels. */
let signals: Int16Array[];

before(async () => {
  model = await createSileroModel({ provider: 'silero' });
  const a = flitePcm('what is the weather today', tmp.dir);
  const e = espeakPcm('please turn the volume up to fifty percent', tmp.dir);
  const speech = concatInt16([a, silence(900, RATE), resample(e.pcm, e.sampleRate, RATE), silence(1000, RATE)]);
  signals = Array.from({ length: STREAMS }, (_, k) => {
    const lead = concatInt16([silence(200 + 170 * k, RATE), noise(300, RATE, 60 + 40 * k, k + 1)]);
    const s = concatInt16([lead, speech]);
    return s.map((v) => Math.round(v * (0.4 + 0.12 * k)));
  });
});
after(async () => {
  await model.close();
  tmp.cleanup();
});

/** The model's input for step `t` of a signal: 64 samples of context, then 512 new ones. */
function stepInput(pcm: Int16Array, t: number): Float32Array {
  const x = new Float32Array(STEP_INPUT);
  const from = t * 512 - 64;
  const part = pcm.subarray(Math.max(0, from), t * 512 + 512);
  int16ToFloat32(part, x.subarray(STEP_INPUT - part.length));
  return x;
}

test('concurrent streams share model runs and each gets what it gets alone, bit for bit', async () => {
  const steps = 60;
  const { batcher } = model;
  const alone: number[][] = [];
  const runs0 = batcher.runs;
  for (const pcm of signals) {
    const state = new Float32Array(STEP_STATE);
    const probs: number[] = [];
    for (let t = 0; t < steps; t++) probs.push(await batcher.score(stepInput(pcm, t), state));
    alone.push(probs);
  }
  assert.equal(batcher.runs - runs0, STREAMS * steps, 'a stream awaited step by step runs alone');
  assert.ok(
    alone.some((p) => p.some((x) => x > 0.5)),
    'the signals hold speech',
  );

  const together: number[][] = signals.map(() => []);
  const states = signals.map(() => new Float32Array(STEP_STATE));
  const runs1 = batcher.runs;
  for (let t = 0; t < steps; t++) {
    const probs = await Promise.all(
      signals.map((pcm, k) => batcher.score(stepInput(pcm, t), states[k] as Float32Array)),
    );
    probs.forEach((p, k) => together[k]?.push(p));
  }
  assert.equal(batcher.runs - runs1, steps, `${STREAMS} streams asking at once share one run per step`);
  assert.deepEqual(together, alone);
});

test('VAD streams pushed together find the same speech as each alone', async () => {
  const opts = { threshold: 0.5, minSilenceMs: 500, minSpeechMs: 150 };
  const run = async (pcm: Int16Array): Promise<VadEvent[]> => {
    const s = model.createStream(opts);
    const ev: VadEvent[] = [];
    for (let at = 0; at < pcm.length; at += 960) ev.push(...(await s.push(pcm.subarray(at, at + 960))));
    s.close();
    return ev;
  };
  const alone: VadEvent[][] = [];
  for (const pcm of signals) alone.push(await run(pcm));
  assert.ok(
    alone.every((ev) => ev.length >= 2),
    JSON.stringify(alone),
  );

  const runs0 = model.batcher.runs;
  const steps0 = model.batcher.steps;
  const together = await Promise.all(signals.map((pcm) => run(pcm)));
  assert.deepEqual(together, alone);
  const runs = model.batcher.runs - runs0;
  const steps = model.batcher.steps - steps0;
  assert.ok(runs * 2 < steps, `${steps} steps took ${runs} model runs`);
});

test('steps of many talking devices, arriving a few ms apart, still share model runs', async () => {
  // Twelve streams, each asking for a step every 32 ms (real time) at its own phase, as the
  // packets of devices that talk at once reach a media worker.
  const { batcher } = model;
  const streams = 12;
  const rounds = 25;
  const runs0 = batcher.runs;
  const steps0 = batcher.steps;
  const asked: Array<Promise<number>> = [];
  await Promise.all(
    Array.from({ length: streams }, async (_, k) => {
      const pcm = signals[k % STREAMS] as Int16Array;
      const state = new Float32Array(STEP_STATE);
      await new Promise((r) => setTimeout(r, (k * 32) / streams));
      for (let t = 0; t < rounds; t++) {
        const p = batcher.score(stepInput(pcm, t), state);
        asked.push(p);
        await Promise.all([p, new Promise((r) => setTimeout(r, 32))]);
      }
    }),
  );
  await Promise.all(asked);
  const runs = batcher.runs - runs0;
  const steps = batcher.steps - steps0;
  assert.equal(steps, streams * rounds);
  assert.ok(runs * 3 <= steps, `${steps} steps arriving apart took ${runs} model runs`);
});

test('one stream that rests and resets through many pauses counts as one: its steps never wait for others', async () => {
  // Each pause longer than 0.25 s rests the model; the sound after it resets the stream's state
  // (new arrays). Pushed as fast as it goes, many resets fall within the batcher's 100 ms window.
  const word = (signals[0] as Int16Array).subarray(0, 16000);
  const pcm = concatInt16(Array.from({ length: 8 }, () => concatInt16([word, silence(400, RATE)])));
  // The streams of the tests before have stopped asking for long enough to count no more.
  await sleep(250);
  const s = model.createStream({ threshold: 0.5, minSilenceMs: 300, minSpeechMs: 100 });
  const gathered0 = model.batcher.gathered;
  const runs0 = model.batcher.runs;
  for (let at = 0; at < pcm.length; at += 960) await s.push(pcm.subarray(at, at + 960));
  s.close();
  assert.ok(model.batcher.runs - runs0 > 100, 'the stream was scored');
  assert.equal(model.batcher.gathered - gathered0, 0, 'a lone stream never waited for others');
});
