import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { availableOpusBackend, createOpusCodec, type OpusBackend } from '../../../audio/opus/codec.ts';
import { encodeChunks } from '../../../audio/media/encode-chunks.ts';
import { PcmFramer, bytesToInt16, rms } from '../../../audio/pcm/pcm.ts';
import { VoiceError } from '../../../core/errors.ts';
import { silentLogger } from '../../../core/logger.ts';

function voiceLike(samples: number, rate: number, offset = 0): Int16Array {
  const out = new Int16Array(samples);
  for (let i = 0; i < samples; i++) {
    const t = (i + offset) / rate;
    out[i] = Math.round(
      6000 * Math.sin(2 * Math.PI * 220 * t) +
        3000 * Math.sin(2 * Math.PI * 660 * t) +
        1500 * Math.sin(2 * Math.PI * 1320 * t),
    );
  }
  return out;
}

const backends: OpusBackend[] = availableOpusBackend() === 'native' ? ['native', 'wasm'] : ['wasm'];

describe('opus codec', () => {
  test('the native backend is available on this machine (built from source at install)', () => {
    assert.equal(availableOpusBackend(), 'native');
  });

  for (const backend of backends) {
    for (const rate of [16000, 24000] as const) {
      test(`${backend} ${rate} Hz: 60 ms frames round-trip with energy`, async () => {
        const codec = await createOpusCodec({ sampleRate: rate, prefer: backend, complexity: 5 });
        try {
          assert.equal(codec.backend, backend);
          assert.equal(codec.frameSamples, (rate * 60) / 1000);
          let energy = 0;
          for (let f = 0; f < 10; f++) {
            const packet = codec.encode(voiceLike(codec.frameSamples, rate, f * codec.frameSamples));
            assert.ok(packet.length > 10 && packet.length < 1000, `packet ${packet.length} B`);
            const pcm = codec.decode(packet);
            assert.ok(pcm, 'decodes');
            assert.equal(pcm.length, codec.frameSamples);
            if (f > 2) energy += rms(pcm);
          }
          assert.ok(energy / 7 > 2000, `decoded level ${energy / 7}`);
        } finally {
          codec.close();
        }
      });
    }
  }

  test('packets interoperate between native and wasm in both directions', {
    skip: backends.length < 2 ? 'native opus not built' : false,
  }, async () => {
    for (const [a, b] of [
      ['native', 'wasm'],
      ['wasm', 'native'],
    ] as const) {
      const enc = await createOpusCodec({ sampleRate: 24000, prefer: a });
      const decSame = await createOpusCodec({ sampleRate: 24000, prefer: a });
      const decOther = await createOpusCodec({ sampleRate: 24000, prefer: b });
      for (let f = 0; f < 5; f++) {
        const p = enc.encode(voiceLike(1440, 24000, f * 1440));
        const x = decSame.decode(p);
        const y = decOther.decode(p);
        assert.ok(x && y);
        // Decoding was measured bit-identical across libopus 1.3.1 and 1.4.
        assert.deepEqual(y, x, `${a} packet decodes identically in ${b}`);
      }
      enc.close();
      decSame.close();
      decOther.close();
    }
  });

  for (const backend of backends) {
    test(`${backend}: a corrupt or empty packet is dropped and counted, never thrown`, async () => {
      const warnings: string[] = [];
      const log = { ...silentLogger, warn: (_o: unknown, msg?: string) => void warnings.push(msg ?? '') };
      const codec = await createOpusCodec({ sampleRate: 16000, prefer: backend, log });
      assert.equal(codec.decode(Buffer.from([0xff, 0xff, 0xff, 0xff, 1, 2, 3])), null);
      assert.equal(codec.decode(new Uint8Array(0)), null);
      assert.equal(codec.decode(Buffer.alloc(5000, 0xff)), null);
      assert.equal(codec.corruptFrames, 3);
      // still works after garbage
      assert.ok(codec.decode(codec.encode(voiceLike(960, 16000))));
      assert.deepEqual(warnings, ['opus packet dropped'], 'only the first drop is logged');
      codec.close();
    });
  }

  test('encode rejects a wrong frame size; bad options are config errors', async () => {
    const codec = await createOpusCodec({ sampleRate: 16000 });
    assert.throws(
      () => codec.encode(new Int16Array(100)),
      (e: unknown) => e instanceof VoiceError && e.code === 'bad_input',
    );
    codec.close();
    await assert.rejects(createOpusCodec({ sampleRate: 44100 as never }), /unsupported sample rate/);
    await assert.rejects(createOpusCodec({ sampleRate: 16000, complexity: 11 }), /complexity/);
  });

  test('encodeChunks (the loop both media engines run) frames arbitrary chunks, pads the last frame and stops on abort', async () => {
    const codec = await createOpusCodec({ sampleRate: 16000 });
    const framer = new PcmFramer(codec.frameSamples);
    const encode = (chunk: Uint8Array | null, final: boolean): Buffer[] => {
      const out = chunk ? framer.push(bytesToInt16(chunk)).map((f) => codec.encode(f)) : [];
      const last = final ? framer.flush() : undefined;
      if (last) out.push(codec.encode(last));
      return out;
    };
    async function* chunks(): AsyncGenerator<Int16Array> {
      for (let i = 0; i < 7; i++) yield voiceLike(700, 16000, i * 700); // 4900 samples = 5.1 frames
    }
    const packets: Buffer[] = [];
    for await (const p of encodeChunks(chunks(), new AbortController().signal, undefined, encode)) packets.push(p);
    assert.equal(packets.length, 6);
    const decoded = packets.map((p) => codec.decode(p)?.length);
    assert.deepEqual(
      decoded,
      Array(6).fill(codec.frameSamples),
      'every packet, the padded last one too, is a whole frame',
    );
    const ac = new AbortController();
    ac.abort();
    await assert.rejects(async () => {
      for await (const _ of encodeChunks(chunks(), ac.signal, undefined, encode)) void _;
    }, /aborted/);
    codec.close();
  });
});
