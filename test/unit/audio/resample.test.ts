import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { Resampler, resample } from '../../../audio/pcm/resample.ts';
import { rms } from '../../../audio/pcm/pcm.ts';

function sine(n: number, rate: number, hz: number, amp = 10000): Int16Array {
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.round(amp * Math.sin((2 * Math.PI * hz * i) / rate));
  return out;
}

/** Frequency estimate from zero crossings over the middle of the signal. */
function freqOf(pcm: Int16Array, rate: number): number {
  const a = Math.floor(pcm.length * 0.1);
  const b = Math.floor(pcm.length * 0.9);
  let crossings = 0;
  for (let i = a + 1; i < b; i++) if ((pcm[i - 1] as number) < 0 !== (pcm[i] as number) < 0) crossings++;
  return (crossings / 2) * (rate / (b - a));
}

describe('resampler', () => {
  for (const [from, to] of [
    [22050, 24000],
    [22050, 16000],
    [24000, 16000],
    [16000, 48000],
  ] as const) {
    test(`${from} → ${to} keeps duration, pitch and level`, () => {
      const input = sine(from, from, 440); // 1 s
      const out = resample(input, from, to);
      assert.ok(Math.abs(out.length - to) <= 1, `length ${out.length}`);
      assert.ok(Math.abs(freqOf(out, to) - 440) < 3, `freq ${freqOf(out, to)}`);
      const ratio = rms(out.subarray(100, -100)) / rms(input.subarray(100, -100));
      assert.ok(ratio > 0.97 && ratio < 1.03, `level ratio ${ratio}`);
    });
  }

  test('downsampling removes content above the new Nyquist (anti-aliasing)', () => {
    const input = sine(48000, 48000, 11000); // above 8 kHz: must not alias into the 16 kHz band
    const out = resample(input, 48000, 16000);
    assert.ok(rms(out.subarray(200, -200)) < 0.02 * rms(input), `leak ${rms(out)}`);
  });

  test('streaming in odd chunks equals one-shot', () => {
    const input = sine(22050, 22050, 300);
    const whole = resample(input, 22050, 24000);
    const r = new Resampler(22050, 24000);
    const parts: number[] = [];
    for (let at = 0; at < input.length; ) {
      const n = 1 + ((at * 7919) % 997);
      parts.push(...r.push(input.subarray(at, at + n)));
      at += n;
    }
    parts.push(...r.flush());
    assert.equal(parts.length, whole.length);
    assert.deepEqual(parts, [...whole]);
  });

  test('same rate is a pass-through', () => {
    const x = Int16Array.from([1, 2, 3]);
    assert.equal(resample(x, 16000, 16000), x);
  });
});
