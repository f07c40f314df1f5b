/**
 * The LLM, ASR and TTS clients send through the SDK with providers/openai/http-fetch.ts (node:http), not the platform
 * fetch: the point is the provider thread's CPU per turn (BENCHMARKS.md). The platform fetch is
 * wrapped with a counter before any client exists, so a client that fell back to it is counted.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../../../../core/logger.ts';
import { createLlmClient } from '../../../../providers/openai/llm.ts';
import { createAsr } from '../../../../providers/index.ts';
import type { z } from 'zod';
import { OpenAiTtsSchema } from '../../../../providers/openai/options.ts';
import { OpenAiTts } from '../../../../providers/openai/tts.ts';
import { fakeText, startFakeOpenAi, type FakeOpenAi } from '../../../fixtures/fake-openai.ts';
import { startFakeOpenAiAudio, type FakeOpenAiAudio } from '../../../fixtures/fake-openai-audio.ts';

/** An OpenAI-compatible TTS client; unset options take the schema's defaults. */
const openAiTts = (o: Omit<z.input<typeof OpenAiTtsSchema>, 'provider'>): OpenAiTts =>
  new OpenAiTts(OpenAiTtsSchema.parse({ provider: 'openai', ...o }), silentLogger);

const platformFetch = globalThis.fetch;
let platformCalls = 0;
let llmFake: FakeOpenAi;
let audioFake: FakeOpenAiAudio;

before(async () => {
  globalThis.fetch = (...args: Parameters<typeof fetch>) => {
    platformCalls++;
    return platformFetch(...args);
  };
  llmFake = await startFakeOpenAi();
  audioFake = await startFakeOpenAiAudio({ transcript: 'through node http' });
});
after(async () => {
  globalThis.fetch = platformFetch;
  await llmFake.close();
  await audioFake.close();
});

test('LLM stream, transcription and speech make no platform fetch call', async () => {
  const signal = new AbortController().signal;
  llmFake.script(fakeText('One. Two. Three.', { chunkSize: 2 }));
  const llm = createLlmClient({ baseURL: llmFake.url, apiKey: 'sk-test', model: 'fake-model' }, silentLogger);
  let text = '';
  for await (const ev of llm.stream({ messages: [{ role: 'user', content: 'hi' }], tools: [], signal }))
    if (ev.type === 'text_delta') text += ev.text;
  assert.equal(text, 'One. Two. Three.');

  const asr = await createAsr(
    { provider: 'openai', baseURL: audioFake.baseURL, apiKey: 'k', model: 'whisper-1' },
    silentLogger,
  );
  assert.equal(await asr.transcribe(new Int16Array(16000), { signal, sampleRate: 16000 }), 'through node http');
  const tts = openAiTts({ baseURL: audioFake.baseURL, apiKey: 'k', model: 'tts-1', voice: 'alloy', format: 'pcm' });
  let bytes = 0;
  for await (const chunk of tts.synthesize('hello', { signal })) bytes += chunk.length;
  assert.ok(bytes > 1000, `speech bytes ${bytes}`);
  await asr.close();
  await tts.close();

  assert.equal(platformCalls, 0);
});
