import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { WavStreamParser, downmix, encodeWav } from '../../../audio/pcm/wav.ts';
import { VoiceError } from '../../../core/errors.ts';

describe('wav', () => {
  test('encodeWav output parses back, even fed one byte at a time', () => {
    const pcm = Int16Array.from({ length: 1000 }, (_, i) => i - 500);
    const file = encodeWav(pcm, 16000);
    const p = new WavStreamParser();
    const got: number[] = [];
    for (let i = 0; i < file.length; i++) got.push(...p.push(file.subarray(i, i + 1)));
    assert.deepEqual(p.format, { sampleRate: 16000, channels: 1 });
    assert.deepEqual(got, [...pcm]);
  });

  test('placeholder data length (espeak-ng 0x7FFFF000) means read to the end', () => {
    const file = encodeWav(Int16Array.from([1, 2, 3]), 22050);
    file.writeUInt32LE(0x7ffff000, 40);
    const more = Buffer.from(Int16Array.from([4, 5]).buffer);
    const p = new WavStreamParser();
    assert.deepEqual([...p.push(file), ...p.push(more)], [1, 2, 3, 4, 5]);
  });

  test('a true data length stops at trailing chunks', () => {
    const file = Buffer.concat([
      encodeWav(Int16Array.from([7, 8]), 8000),
      Buffer.from('LIST\x04\x00\x00\x00abcd', 'latin1'),
    ]);
    const p = new WavStreamParser();
    assert.deepEqual([...p.push(file)], [7, 8]);
  });

  test('non-WAV and non-16-bit input is a BadInput error', () => {
    assert.throws(
      () => new WavStreamParser().push(Buffer.from('ID3\x03garbage-not-a-wav')),
      (e: unknown) => e instanceof VoiceError && e.code === 'bad_input',
    );
    const f = encodeWav(Int16Array.from([1]), 8000);
    f.writeUInt16LE(8, 34);
    assert.throws(() => new WavStreamParser().push(f), /16-bit/);
  });

  test('downmix averages channels', () => {
    assert.deepEqual([...downmix(Int16Array.from([10, 20, -10, -30]), 2)], [15, -20]);
  });
});
