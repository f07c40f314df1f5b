/** The FunASR options schema and the messages built from it. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AsrSchema } from '../../../../providers/index.ts';
import { FunasrAsrSchema } from '../../../../providers/funasr/options.ts';
import { configMessage, endMessage, frameSamples } from '../../../../providers/funasr/messages.ts';

test('defaults: 2pass, [5,10,5] in 60 ms pieces, itn on, certificates checked, 5 s to connect, 3 s for the final', () => {
  const o = FunasrAsrSchema.parse({ provider: 'funasr', url: 'ws://127.0.0.1:10095' });
  assert.deepEqual(o, {
    provider: 'funasr',
    url: 'ws://127.0.0.1:10095',
    mode: '2pass',
    chunkSize: [5, 10, 5],
    chunkInterval: 10,
    encoderChunkLookBack: 4,
    decoderChunkLookBack: 0,
    itn: true,
    rejectUnauthorized: true,
    connectTimeoutMs: 5000,
    finalTimeoutMs: 3000,
  });
  assert.equal(frameSamples(o), 960, '60 ms at 16 kHz');
  assert.equal(frameSamples({ chunkSize: [8, 8, 4], chunkInterval: 10 }), 768, '48 ms');
  assert.equal(AsrSchema.parse({ provider: 'funasr', url: 'wss://asr.lan:10095' }).provider, 'funasr');
});

test('refused: an unknown key, a URL that is not ws(s), an unknown mode, a bad chunk size, fractional hotword weights', () => {
  const base = { provider: 'funasr', url: 'ws://127.0.0.1:10095' };
  for (const bad of [
    { ...base, apiKey: 'x' },
    { ...base, url: 'http://127.0.0.1:10095' },
    { ...base, url: 'not a url' },
    { provider: 'funasr' },
    { ...base, mode: 'realtime' },
    { ...base, chunkSize: [5, 0, 5] },
    { ...base, chunkSize: [5, 10] },
    { ...base, hotwords: { 小智: 2.5 } },
    { ...base, hotwords: Object.fromEntries(Array.from({ length: 201 }, (_, i) => [`w${i}`, 10])) },
    { ...base, finalTimeoutMs: 0 },
  ])
    assert.equal(AsrSchema.safeParse(bad).success, false, JSON.stringify(bad).slice(0, 120));
});

test('the config message has the keys FunASR expects; hotwords go as a JSON string; the end marker renames the utterance', () => {
  const o = FunasrAsrSchema.parse({
    provider: 'funasr',
    url: 'ws://127.0.0.1:10095',
    mode: 'online',
    hotwords: { 小智: 20, 阿里巴巴: 30 },
    itn: false,
  });
  assert.deepEqual(JSON.parse(configMessage(o, 'xiaozhi-1')), {
    mode: 'online',
    chunk_size: [5, 10, 5],
    chunk_interval: 10,
    encoder_chunk_look_back: 4,
    decoder_chunk_look_back: 0,
    audio_fs: 16000,
    wav_name: 'xiaozhi-1',
    wav_format: 'pcm',
    is_speaking: true,
    hotwords: '{"小智":20,"阿里巴巴":30}',
    itn: false,
  });
  const plain = JSON.parse(configMessage(FunasrAsrSchema.parse({ provider: 'funasr', url: 'ws://h:1' }), 'n'));
  assert.equal('hotwords' in plain, false, 'no hotwords key without hotwords');
  assert.deepEqual(JSON.parse(endMessage('xiaozhi-1-end')), {
    is_speaking: false,
    is_end: true,
    wav_name: 'xiaozhi-1-end',
  });
});
