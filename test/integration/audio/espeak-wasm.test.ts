import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { createOpusCodec } from '../../../audio/opus/codec.ts';
import { transcodeToPcm } from '../../../audio/ffmpeg/transcode.ts';
import { checkEspeakVoice, espeakText, loadEspeakEngine } from '../../../audio/tts/espeak-wasm.ts';
import { ttsToPcm } from '../../../audio/tts/to-pcm.ts';
import { PcmFramer, concatInt16, rms } from '../../../audio/pcm/pcm.ts';
import { encodeWav } from '../../../audio/pcm/wav.ts';
import { VoiceError } from '../../../core/errors.ts';
import { waitForNoAudioChildren } from '../../fixtures/audio/make-audio.ts';

const SENTENCE = 'The quick brown fox jumps over the lazy dog, and then it takes a short nap in the sun.';

/** What a media worker gets from the WASM engine for `text`: 22,050 Hz chunks, in order. */
async function speak(text: string, voice = 'en-us'): Promise<Int16Array[]> {
  const engine = await loadEspeakEngine();
  const chunks: Int16Array[] = [];
  engine.synthesize(espeakText(text), { voice }, (c) => chunks.push(c));
  return chunks;
}

async function* bytesOf(chunks: Int16Array[]): AsyncGenerator<Buffer> {
  for (const c of chunks) yield Buffer.from(c.buffer, c.byteOffset, c.byteLength);
}

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
    assert.equal((await loadEspeakEngine()).sampleRate, 22050);
    const signal = new AbortController().signal;
    const chunks = await speak(SENTENCE);
    assert.ok(chunks.length > 3, `espeak produced ${chunks.length} chunks`);
    const espeakPcm = concatInt16(chunks);
    const trueMs = (espeakPcm.length * 1000) / 22050;
    assert.ok(trueMs > 3000, `espeak produced ${trueMs} ms`);

    const pcm = concatInt16(await collect(transcodeToPcm(encodeWav(espeakPcm, 22050), { sampleRate: 24000, signal })));
    assert.ok(
      Math.abs((pcm.length * 1000) / 24000 - trueMs) / trueMs < 0.05,
      `ffmpeg PCM ${(pcm.length * 1000) / 24000} ms vs ${trueMs}`,
    );

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
    const signal = new AbortController().signal;
    const chunks = await speak(SENTENCE);
    const inproc = concatInt16(
      await collect(ttsToPcm(bytesOf(chunks), { container: 'pcm', sampleRate: 22050 }, { sampleRate: 16000, signal })),
    );
    const raw = concatInt16(chunks);
    const viaFfmpeg = concatInt16(await collect(transcodeToPcm(encodeWav(raw, 22050), { sampleRate: 16000, signal })));
    assert.ok(Math.abs(inproc.length - viaFfmpeg.length) < 16000 * 0.02, `${inproc.length} vs ${viaFfmpeg.length}`);
    const ratio = rms(inproc) / rms(viaFfmpeg);
    assert.ok(ratio > 0.9 && ratio < 1.1, `level ratio ${ratio}`);
  });

  test('Mandarin with cmn-latn-pinyin produces speech; an unknown voice is a clear error', async () => {
    const engine = await loadEspeakEngine();
    checkEspeakVoice(engine, 'cmn-latn-pinyin');
    const pcm = concatInt16(await speak('今天天气怎么样', 'cmn-latn-pinyin'));
    assert.ok(pcm.length > 22050 * 0.8 && rms(pcm) > 300, `mandarin ${pcm.length} samples`);
    assert.throws(
      () => checkEspeakVoice(engine, 'no-such-voice'),
      (e: unknown) =>
        e instanceof VoiceError && e.code === 'config_invalid' && /no-such-voice.*does not exist/.test(e.message),
    );
  });
});
