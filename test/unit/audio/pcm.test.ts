import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import {
  ByteAligner,
  PcmFramer,
  bytesToInt16,
  concatInt16,
  dbfs,
  durationMs,
  int16ToBuffer,
  rms,
  samplesForMs,
} from '../../../audio/pcm/pcm.ts';

describe('pcm helpers', () => {
  test('bytesToInt16 is a view when aligned and a copy when not', () => {
    const buf = Buffer.from([1, 0, 2, 0, 3, 0, 4]);
    const view = bytesToInt16(buf.subarray(0, 6));
    assert.deepEqual([...view], [1, 2, 3]);
    const odd = bytesToInt16(Buffer.from([9, 1, 0, 2, 0]).subarray(1));
    assert.deepEqual([...odd], [1, 2]);
    const back = int16ToBuffer(view);
    assert.equal(back.buffer, view.buffer, 'int16ToBuffer shares memory');
  });

  test('duration math and energy', () => {
    assert.equal(samplesForMs(60, 16000), 960);
    assert.equal(samplesForMs(60, 24000), 1440);
    assert.equal(durationMs(1440, 24000), 60);
    assert.equal(rms(new Int16Array(10)), 0);
    assert.equal(dbfs(new Int16Array(10)), -Infinity);
    assert.equal(Math.round(rms(Int16Array.from([1000, -1000, 1000, -1000]))), 1000);
    assert.deepEqual([...concatInt16([Int16Array.from([1]), Int16Array.from([2, 3])])], [1, 2, 3]);
  });

  test('ByteAligner keeps a split sample for the next chunk', () => {
    const a = new ByteAligner();
    const all = Buffer.from(Int16Array.from([100, -200, 300]).buffer);
    const out1 = a.push(all.subarray(0, 3));
    assert.deepEqual([...out1], [100]);
    assert.equal(a.pending, true);
    const out2 = a.push(all.subarray(3));
    assert.deepEqual([...out2], [-200, 300]);
    assert.equal(a.pending, false);
  });

  test('PcmFramer cuts exact frames and pads the last one with silence', () => {
    const f = new PcmFramer(4);
    const frames = [...f.push(Int16Array.from([1, 2, 3])), ...f.push(Int16Array.from([4, 5, 6, 7, 8, 9, 10]))];
    assert.deepEqual(
      frames.map((x) => [...x]),
      [
        [1, 2, 3, 4],
        [5, 6, 7, 8],
      ],
    );
    assert.equal(f.buffered, 2);
    assert.deepEqual([...(f.flush() ?? [])], [9, 10, 0, 0]);
    assert.equal(f.flush(), null);
    // frames are independent arrays
    frames[0]?.fill(0);
    assert.deepEqual([...(frames[1] ?? [])], [5, 6, 7, 8]);
  });
});
