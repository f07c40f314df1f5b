import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { createOpusCodec } from '../../../audio/opus/codec.ts';
import { transcodeToPcm } from '../../../audio/ffmpeg/transcode.ts';
import { createTts } from '../../../audio/tts/tts.ts';
import { synthesizePcm } from '../../../audio/tts/to-pcm.ts';
import { PcmFramer, bytesToInt16, concatInt16, rms } from '../../../audio/pcm.ts';
import { encodeWav } from '../../../audio/wav.ts';
import { silentLogger } from '../../../core/logger.ts';
import { VoiceError } from '../../../core/errors.ts';
import { waitForNoAudioChildren } from '../../fixtures/audio/make-audio.ts';

const SENTENCE = 'The quick brown fox jumps over the lazy dog, and then it takes a short nap in the sun.';

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

describe('espeak-ng (WASM) → PCM → Opus → decode', () => {
  after(async () => {
    assert.deepEqual(await waitForNoAudioChildren(), []);
  });

  test('espeak-ng synthesizes a sentence that survives ffmpeg and both Opus codecs; duration within 5 %', async () => {
    const tts = await createTts({ provider: 'espeak', voice: 'en-us' }, silentLogger);
    assert.deepEqual(tts.outputFormat, { container: 'pcm', sampleRate: 22050 });
    const signal = new AbortController().signal;
    const chunks = await collect(tts.synthesize(SENTENCE, { signal }));
    assert.ok(chunks.length > 3, `espeak produced ${chunks.length} chunks`);
    const espeakPcm = concatInt16(chunks.map((c) => bytesToInt16(c)));
    const trueMs = (espeakPcm.length * 1000) / 22050;
    assert.ok(trueMs > 3000, `espeak produced ${trueMs} ms`);

    const pcm = concatInt16(await collect(transcodeToPcm(encodeWav(espeakPcm, 22050), { sampleRate: 24000, signal })));
    assert.ok(Math.abs((pcm.length * 1000) / 24000 - trueMs) / trueMs < 0.05, `ffmpeg PCM ${(pcm.length * 1000) / 24000} ms vs ${trueMs}`);

    const encoder = await createOpusCodec({ sampleRate: 24000, prefer: 'native' });
    const wasmDecoder = await createOpusCodec({ sampleRate: 24000, prefer: 'wasm' });
    const nativeDecoder = await createOpusCodec({ sampleRate: 24000, prefer: 'native' });
    const framer = new PcmFramer(encoder.frameSamples);
    const frames = [...framer.push(pcm), framer.flush()].filter((f): f is Int16Array => f !== null);
    const packets = frames.map((f) => encoder.encode(f));
    assert.equal(packets.length, Math.ceil(pcm.length / 1440));
    const viaWasm = concatInt16(packets.map((p) => wasmDecoder.decode(p) ?? new Int16Array(0)));
    const viaNative = concatInt16(packets.map((p) => nativeDecoder.decode(p) ?? new Int16Array(0)));
    const decodedMs = (viaWasm.length * 1000) / 24000;
    assert.ok(Math.abs(decodedMs - trueMs) / trueMs < 0.05, `decoded ${decodedMs} ms vs ${trueMs}`);
    assert.deepEqual(viaWasm, viaNative, 'native packets decode identically in the wasm fallback');
    assert.ok(rms(viaWasm) > 0.5 * rms(pcm) && rms(viaWasm) > 300, `energy ${rms(viaWasm)} vs source ${rms(pcm)}`);
    assert.equal(wasmDecoder.corruptFrames, 0);
    for (const c of [encoder, wasmDecoder, nativeDecoder]) c.close();
  });

  test('the in-process path (resample, no ffmpeg) matches ffmpeg in length and level', async () => {
    const tts = await createTts({ provider: 'espeak' }, silentLogger);
    const signal = new AbortController().signal;
    const inproc = concatInt16(await collect(synthesizePcm(tts, SENTENCE, { sampleRate: 16000, signal })));
    const raw = concatInt16((await collect(tts.synthesize(SENTENCE, { signal }))).map((c) => bytesToInt16(c)));
    const viaFfmpeg = concatInt16(await collect(transcodeToPcm(encodeWav(raw, 22050), { sampleRate: 16000, signal })));
    assert.ok(Math.abs(inproc.length - viaFfmpeg.length) < 16000 * 0.02, `${inproc.length} vs ${viaFfmpeg.length}`);
    const ratio = rms(inproc) / rms(viaFfmpeg);
    assert.ok(ratio > 0.9 && ratio < 1.1, `level ratio ${ratio}`);
  });

  test('Mandarin with cmn-latn-pinyin produces speech; an unknown voice is a clear error', async () => {
    const zh = await createTts({ provider: 'espeak', voice: 'cmn-latn-pinyin' }, silentLogger);
    const signal = new AbortController().signal;
    const pcm = concatInt16(await collect(synthesizePcm(zh, '今天天气怎么样', { sampleRate: 24000, signal })));
    assert.ok(pcm.length > 24000 * 0.8 && rms(pcm) > 300, `mandarin ${pcm.length} samples`);
    await assert.rejects(
      createTts({ provider: 'espeak', voice: 'no-such-voice' }, silentLogger),
      (e: unknown) => e instanceof VoiceError && e.code === 'config_invalid' && /no-such-voice.*does not exist/.test(e.message),
    );
  });

  test('aborting espeak mid-stream stops at once; no process is involved', async () => {
    const tts = await createTts({ provider: 'espeak' }, silentLogger);
    const ac = new AbortController();
    const long = Array(40).fill(SENTENCE).join(' ');
    let chunks = 0;
    await assert.rejects(async () => {
      for await (const _ of tts.synthesize(long, { signal: ac.signal })) {
        if (++chunks === 2) ac.abort();
      }
    }, /aborted/);
    assert.deepEqual(await waitForNoAudioChildren(), []);
  });
});
