/**
 * What a media worker turns a downlink stream's bytes into before encoding: Ogg/Opus decoded at
 * the downlink rate with the encoder's pre-skip dropped and the header's gain applied; PCM at
 * another rate resampled exactly as the resampler does alone; headers that are not Opus's refused.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createDownlinkInput, type DownlinkInput } from '../../../audio/media/downlink-input.ts';
import { createOpusCodec } from '../../../audio/opus/codec.ts';
import { concatInt16, int16ToBuffer, rms } from '../../../audio/pcm/pcm.ts';
import { resample } from '../../../audio/pcm/resample.ts';
import { oggOpus } from '../../../features/push/ogg-opus.ts';
import { oggCrc } from '../../../audio/opus/ogg-crc.ts';
import { VoiceError } from '../../../core/errors.ts';
import { silentLogger } from '../../../core/logger.ts';

function tone(samples: number, rate: number, amplitude = 8000): Int16Array {
  const pcm = new Int16Array(samples);
  for (let i = 0; i < samples; i++) pcm[i] = Math.round(amplitude * Math.sin((2 * Math.PI * 440 * i) / rate));
  return pcm;
}

async function tonePackets(frames: number, rate: 24000 | 48000): Promise<Buffer[]> {
  const codec = await createOpusCodec({ sampleRate: rate });
  try {
    const pcm = tone(frames * codec.frameSamples, rate);
    const out: Buffer[] = [];
    for (let f = 0; f < frames; f++)
      out.push(codec.encode(pcm.subarray(f * codec.frameSamples, (f + 1) * codec.frameSamples)));
    return out;
  } finally {
    codec.close();
  }
}

/** Everything `input` gives for `bytes` fed in pieces of `piece` bytes, copied out of the sink at once. */
function run(input: DownlinkInput, bytes: Uint8Array, piece: number): Int16Array {
  const out: Int16Array[] = [];
  const sink = (pcm: Int16Array): void => void out.push(pcm.slice());
  for (let at = 0; at < bytes.byteLength; at += piece) input.push(bytes.subarray(at, at + piece), sink);
  input.end(sink);
  input.close();
  return concatInt16(out);
}

const badInput = (pattern: RegExp) => (e: unknown) =>
  e instanceof VoiceError && e.code === 'bad_input' && pattern.test(e.message);

/** `ogg` with the OpusHead field at `offset` (a uint8 or int16) replaced, its page's CRC redone. */
function withHeadField(ogg: Buffer, offset: number, value: number, bytes: 1 | 2): Buffer {
  const copy = Buffer.from(ogg);
  const head = 28; // one lacing value: the first page's body starts at 27 + 1
  if (bytes === 1) copy.writeUInt8(value, head + offset);
  else copy.writeInt16LE(value, head + offset);
  copy.writeUInt32LE(0, 22);
  copy.writeUInt32LE(oggCrc(copy.subarray(0, head + 19)), 22);
  return copy;
}

describe('downlink input', () => {
  test('Ogg/Opus at 48 kHz is decoded at the downlink rate, less the pre-skip (312 at 48 kHz = 156 at 24 kHz)', async () => {
    const packets = await tonePackets(10, 48000);
    const ogg = oggOpus(packets, { inputSampleRate: 48000 });
    for (const piece of [1, 200, ogg.length]) {
      const pcm = run(createDownlinkInput({ container: 'ogg' }, 24000, silentLogger), ogg, piece);
      assert.equal(pcm.length, 10 * 1440 - 156, `pieces of ${piece}`);
      assert.ok(rms(pcm.subarray(1440)) > 4000, 'the tone, not silence');
    }
  });

  test('the OpusHead output gain is applied (-6 dB halves the level)', async () => {
    const ogg = oggOpus(await tonePackets(10, 24000), { inputSampleRate: 24000 });
    const plain = run(createDownlinkInput({ container: 'ogg' }, 24000, silentLogger), ogg, ogg.length);
    const quieter = run(
      createDownlinkInput({ container: 'ogg' }, 24000, silentLogger),
      withHeadField(ogg, 16, -6 * 256, 2),
      ogg.length,
    );
    const ratio = rms(quieter) / rms(plain);
    assert.ok(Math.abs(ratio - 0.501) < 0.01, `level ratio ${ratio}`);
  });

  test('headers that are not mono/stereo Opus are refused with bad_input', async () => {
    const ogg = oggOpus(await tonePackets(2, 24000), { inputSampleRate: 24000 });
    const input = (): DownlinkInput => createDownlinkInput({ container: 'ogg' }, 24000, silentLogger);
    assert.throws(() => run(input(), withHeadField(ogg, 18, 1, 1), ogg.length), badInput(/mapping family 1/));
    assert.throws(() => run(input(), withHeadField(ogg, 8, 0x10, 1), ogg.length), badInput(/version 16/));
    assert.throws(
      () => run(input(), withHeadField(ogg, 0, 0x58, 1), ogg.length),
      badInput(/does not start with OpusHead/),
    );
    // Headers only: the stream ends before any audio is owed, which is fine; before OpusTags it is not.
    const headOnly = ogg.subarray(0, 27 + 1 + 19);
    assert.throws(() => run(input(), headOnly, headOnly.length), badInput(/before its headers were complete/));
  });

  test('PCM at 22,050 Hz in pieces that split samples: exactly what the resampler gives in one go', () => {
    const pcm = tone(22050, 22050);
    const bytes = int16ToBuffer(pcm);
    const got = run(createDownlinkInput({ container: 'pcm', sampleRate: 22050 }, 24000, silentLogger), bytes, 333);
    assert.deepEqual(got, resample(pcm, 22050, 24000));
    const same = run(createDownlinkInput({ container: 'pcm', sampleRate: 24000 }, 24000, silentLogger), bytes, 333);
    assert.deepEqual(same, pcm, 'at the downlink rate: untouched');
  });
});
