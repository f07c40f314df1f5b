import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { Segmenter } from '../../../audio/vad/segmenter.ts';
import type { VadEvent } from '../../../audio/vad/vad.ts';

function run(probs: number[], frameMs = 32, opts = { threshold: 0.5, minSilenceMs: 300, minSpeechMs: 96 }): VadEvent[] {
  const s = new Segmenter(opts);
  const out: VadEvent[] = [];
  probs.forEach((p, i) => s.frame(p, i * frameMs, frameMs, out));
  return out;
}

const rep = (p: number, n: number): number[] => Array<number>(n).fill(p);

describe('vad segmenter', () => {
  test('start at the first voiced frame, end at the start of the closing silence', () => {
    const ev = run([...rep(0, 10), ...rep(0.9, 20), ...rep(0.05, 15)]);
    assert.deepEqual(ev, [
      { type: 'speech_start', atMs: 320 },
      { type: 'speech_end', atMs: 960 },
    ]);
  });

  test('a burst shorter than minSpeechMs is ignored', () => {
    assert.deepEqual(run([...rep(0, 5), ...rep(0.9, 2), ...rep(0, 30)]), []);
  });

  test('pauses shorter than minSilenceMs do not split speech; mid-band frames do not end it', () => {
    const ev = run([...rep(0.9, 10), ...rep(0.1, 5), ...rep(0.9, 10), ...rep(0.4, 20), ...rep(0.9, 3), ...rep(0, 12)]);
    assert.deepEqual(ev.map((e) => e.type), ['speech_start', 'speech_end']);
  });

  test('padding moves boundaries outwards', () => {
    const ev = run([...rep(0, 10), ...rep(0.9, 20), ...rep(0, 15)], 32, { threshold: 0.5, minSilenceMs: 300, minSpeechMs: 96, speechPadMs: 100 } as never);
    assert.deepEqual(ev, [
      { type: 'speech_start', atMs: 220 },
      { type: 'speech_end', atMs: 1060 },
    ]);
  });
});
