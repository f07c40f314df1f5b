/** OpenAI-compatible ASR and TTS against servers that need no key (local Whisper / TTS servers). */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../../../../core/logger.ts';
import { createAsr } from '../../../../providers/index.ts';
import type { z } from 'zod';
import { OpenAiTtsSchema } from '../../../../providers/openai/options.ts';
import { OpenAiTts } from '../../../../providers/openai/tts.ts';
import { startFakeOpenAiAudio, type FakeOpenAiAudio } from '../../../fixtures/fake-openai-audio.ts';

/** An OpenAI-compatible TTS client; unset options take the schema's defaults. */
const openAiTts = (o: Omit<z.input<typeof OpenAiTtsSchema>, 'provider'>): OpenAiTts =>
  new OpenAiTts(OpenAiTtsSchema.parse({ provider: 'openai', ...o }), silentLogger);

let fake: FakeOpenAiAudio;
before(async () => {
  fake = await startFakeOpenAiAudio({ transcript: 'no key needed' });
});
after(() => fake.close());

test('an empty apiKey works and sends no Authorization header', async () => {
  const asr = await createAsr(
    { provider: 'openai', baseURL: fake.baseURL, apiKey: '', model: 'whisper-1' },
    silentLogger,
  );
  const text = await asr.transcribe(new Int16Array(16000), { signal: new AbortController().signal, sampleRate: 16000 });
  assert.equal(text, 'no key needed');
  assert.equal(fake.transcriptions.at(-1)?.authorization, undefined);
  const tts = openAiTts({ baseURL: fake.baseURL, apiKey: '', model: 'tts-1', voice: 'alloy', format: 'pcm' });
  let bytes = 0;
  for await (const chunk of tts.synthesize('hello', { signal: new AbortController().signal })) bytes += chunk.length;
  assert.ok(bytes > 1000);
  assert.equal(fake.speeches.at(-1)?.authorization, undefined);
  await asr.close();
  await tts.close();
});
