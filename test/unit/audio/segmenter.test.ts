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
    assert.deepEqual(
      ev.map((e) => e.type),
      ['speech_start', 'speech_end'],
    );
  });

  test('padding moves boundaries outwards', () => {
    const ev = run([...rep(0, 10), ...rep(0.9, 20), ...rep(0, 15)], 32, {
      threshold: 0.5,
      minSilenceMs: 300,
      minSpeechMs: 96,
      speechPadMs: 100,
    } as never);
    assert.deepEqual(ev, [
      { type: 'speech_start', atMs: 220 },
      { type: 'speech_end', atMs: 1060 },
    ]);
  });

  test('pauseMs: a tentative pause inside speech, resume when voice returns, then the real end', () => {
    const opts = { threshold: 0.5, minSilenceMs: 300, minSpeechMs: 96, pauseMs: 128 };
    const ev = run([...rep(0.9, 10), ...rep(0.05, 5), ...rep(0.9, 5), ...rep(0.05, 15)], 32, opts as never);
    assert.deepEqual(ev, [
      { type: 'speech_start', atMs: 0 },
      // Silence from 320 ms; announced once it has lasted 128 ms (after the frame ending at 448).
      { type: 'pause', atMs: 320 },
      { type: 'resume', atMs: 480 },
      { type: 'pause', atMs: 640 },
      { type: 'speech_end', atMs: 640 },
    ]);
    // A silence shorter than pauseMs says nothing; mid-band frames neither pause nor resume.
    assert.deepEqual(
      run([...rep(0.9, 10), ...rep(0.05, 3), ...rep(0.9, 5), ...rep(0.4, 10), ...rep(0.9, 2)], 32, opts as never).map(
        (e) => e.type,
      ),
      ['speech_start'],
    );
  });

  test('pauseMs at or above minSilenceMs, or 0: no pause events', () => {
    const probs = [...rep(0.9, 10), ...rep(0.05, 15)];
    for (const pauseMs of [0, 300, 500]) {
      const ev = run(probs, 32, { threshold: 0.5, minSilenceMs: 300, minSpeechMs: 96, pauseMs } as never);
      assert.deepEqual(
        ev.map((e) => e.type),
        ['speech_start', 'speech_end'],
        `pauseMs ${pauseMs}`,
      );
    }
  });
});
