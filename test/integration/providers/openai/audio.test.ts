import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createAsr } from '../../../../providers/index.ts';
import type { z } from 'zod';
import { OpenAiTtsSchema } from '../../../../providers/openai/options.ts';
import { OpenAiTts } from '../../../../providers/openai/tts.ts';
import { ConfigSchema } from '../../../../server/config.ts';
import { synthesizePcm } from '../../../../audio/tts/to-pcm.ts';
import { WavStreamParser } from '../../../../audio/pcm/wav.ts';
import { rms } from '../../../../audio/pcm/pcm.ts';
import { VoiceError } from '../../../../core/errors.ts';
import { silentLogger } from '../../../../core/logger.ts';
import { startFakeOpenAiAudio, tonePcm24k, type FakeOpenAiAudio } from '../../../fixtures/fake-openai-audio.ts';
import { makeTempDir, tone, waitForNoAudioChildren } from '../../../fixtures/audio/make-audio.ts';

/** An OpenAI-compatible TTS client; unset options take the schema's defaults. */
const openAiTts = (o: Omit<z.input<typeof OpenAiTtsSchema>, 'provider'>): OpenAiTts =>
  new OpenAiTts(OpenAiTtsSchema.parse({ provider: 'openai', ...o }), silentLogger);

const tmp = makeTempDir();
let fake: FakeOpenAiAudio;
let mp3: Buffer;

before(async () => {
  const raw = join(tmp.dir, 'tone.raw');
  const out = join(tmp.dir, 'tone.mp3');
  writeFileSync(raw, tonePcm24k(2000));
  execFileSync('ffmpeg', [
    '-loglevel',
    'error',
    '-f',
    's16le',
    '-ar',
    '24000',
    '-ac',
    '1',
    '-i',
    raw,
    '-codec:a',
    'libmp3lame',
    '-b:a',
    '48k',
    out,
  ]);
  mp3 = readFileSync(out);
  fake = await startFakeOpenAiAudio({
    transcript: 'turn on the lights',
    slowMs: 3000,
    speechAudio: (format) => (format === 'mp3' ? mp3 : format === 'pcm' ? tonePcm24k(1500) : Buffer.alloc(0)),
    chunkBytes: 2000,
    chunkDelayMs: 15,
  });
});
after(async () => {
  await fake.close();
  tmp.cleanup();
});

const never = (): AbortSignal => new AbortController().signal;

describe('openai-compatible ASR', () => {
  test('uploads a 16-bit WAV as multipart with model and language; returns the text', async () => {
    fake.transcriptionMode = 'ok';
    const asr = await createAsr(
      { provider: 'openai', baseURL: fake.baseURL, apiKey: 'sk-test', model: 'whisper-1', language: 'en' },
      silentLogger,
    );
    const pcm = tone(1000, 16000, 300);
    assert.equal(await asr.transcribe(pcm, { signal: never(), sampleRate: 16000 }), 'turn on the lights');
    const req = fake.transcriptions.at(-1);
    assert.ok(req);
    assert.equal(req.model, 'whisper-1');
    assert.equal(req.language, 'en');
    assert.equal(req.responseFormat, 'json');
    assert.equal(req.authorization, 'Bearer sk-test');
    assert.equal(req.fileName, 'utterance.wav');
    const parser = new WavStreamParser();
    const samples = parser.push(req.file);
    assert.deepEqual(parser.format, { sampleRate: 16000, channels: 1 });
    assert.deepEqual(samples, pcm);
    await asr.close();
  });

  test('a 500 answer is a retryable ProviderFailed error', async () => {
    fake.transcriptionMode = 'error500';
    const asr = await createAsr({ provider: 'openai', baseURL: fake.baseURL, apiKey: 'k', model: 'm' }, silentLogger);
    await assert.rejects(
      asr.transcribe(tone(300, 16000, 300), { signal: never(), sampleRate: 16000 }),
      (e: unknown) => e instanceof VoiceError && e.code === 'provider_failed' && e.retryable,
    );
  });

  test('a slow answer becomes a Timeout error after timeoutMs; a caller abort stays Aborted', async () => {
    fake.transcriptionMode = 'slow';
    const asr = await createAsr(
      { provider: 'openai', baseURL: fake.baseURL, apiKey: 'k', model: 'm', timeoutMs: 300 },
      silentLogger,
    );
    const t0 = performance.now();
    await assert.rejects(
      asr.transcribe(tone(300, 16000, 300), { signal: never(), sampleRate: 16000 }),
      (e: unknown) => e instanceof VoiceError && e.code === 'timeout' && e.retryable,
    );
    assert.ok(performance.now() - t0 < 2500);
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    const asr2 = await createAsr(
      { provider: 'openai', baseURL: fake.baseURL, apiKey: 'k', model: 'm', timeoutMs: 5000 },
      silentLogger,
    );
    await assert.rejects(
      asr2.transcribe(tone(300, 16000, 300), { signal: ac.signal, sampleRate: 16000 }),
      (e: unknown) => e instanceof VoiceError && e.code === 'aborted',
    );
    fake.transcriptionMode = 'ok';
  });
});

describe('openai-compatible TTS', () => {
  test('pcm response is streamed and resampled in-process; first audio before the body ends', async () => {
    fake.speechMode = 'ok';
    const tts = openAiTts({ baseURL: fake.baseURL, apiKey: 'k', model: 'tts-1', voice: 'alloy', format: 'pcm' });
    let firstAt = 0;
    let samples = 0;
    for await (const pcm of synthesizePcm(tts, 'hello world', { sampleRate: 16000, signal: never() })) {
      if (firstAt === 0) firstAt = performance.now();
      samples += pcm.length;
    }
    assert.ok(firstAt < fake.lastSpeechEndAt - 50, 'first PCM arrived while the server was still sending');
    assert.ok(Math.abs(samples / 16000 - 1.5) < 0.02, `${samples / 16000} s`);
    const req = fake.speeches.at(-1);
    assert.deepEqual(req?.body, { model: 'tts-1', voice: 'alloy', input: 'hello world', response_format: 'pcm' });
  });

  test('without a format, WAV is asked for: parsed here, no ffmpeg process per sentence', async () => {
    const tts = openAiTts({ baseURL: fake.baseURL, apiKey: 'k', model: 'tts-1', voice: 'alloy' });
    assert.deepEqual(tts.outputFormat, { container: 'wav' });
    const config = ConfigSchema.parse({ tts: { provider: 'openai', baseURL: fake.baseURL } });
    assert.equal(config.tts.provider === 'openai' ? config.tts.format : undefined, 'wav');
  });

  test('mp3 response goes through one ffmpeg and yields the right duration', async () => {
    const tts = openAiTts({ baseURL: fake.baseURL, apiKey: 'k', model: 'tts-1', voice: 'alloy', format: 'mp3' });
    assert.deepEqual(tts.outputFormat, { container: 'mp3' });
    let samples = 0;
    let energy = 0;
    for await (const pcm of synthesizePcm(tts, 'hi', { sampleRate: 24000, signal: never() })) {
      samples += pcm.length;
      energy = Math.max(energy, rms(pcm));
    }
    assert.ok(Math.abs(samples / 24000 - 2) < 0.1, `${samples / 24000} s`);
    assert.ok(energy > 1000);
    assert.deepEqual(await waitForNoAudioChildren(), []);
  });

  test('500 and timeout answers become ProviderFailed and Timeout', async () => {
    const tts = openAiTts({
      baseURL: fake.baseURL,
      apiKey: 'k',
      model: 'tts-1',
      voice: 'alloy',
      format: 'pcm',
      timeoutMs: 300,
    });
    const drain = async (): Promise<void> => {
      for await (const _ of tts.synthesize('x', { signal: never() })) void _;
    };
    fake.speechMode = 'error500';
    await assert.rejects(
      drain(),
      (e: unknown) => e instanceof VoiceError && e.code === 'provider_failed' && e.retryable,
    );
    fake.speechMode = 'slow';
    const t0 = performance.now();
    await assert.rejects(drain(), (e: unknown) => e instanceof VoiceError && e.code === 'timeout');
    assert.ok(performance.now() - t0 < 2500);
    fake.speechMode = 'ok';
  });

  test('abort mid-body stops the stream at once', async () => {
    fake.speechMode = 'ok';
    const tts = openAiTts({ baseURL: fake.baseURL, apiKey: 'k', model: 'tts-1', voice: 'alloy', format: 'pcm' });
    const ac = new AbortController();
    let chunks = 0;
    await assert.rejects(
      async () => {
        for await (const _ of tts.synthesize('x', { signal: ac.signal })) if (++chunks === 2) ac.abort();
      },
      (e: unknown) => e instanceof VoiceError && e.code === 'aborted',
    );
    assert.equal(chunks, 2);
  });
});
