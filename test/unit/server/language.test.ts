import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigSchema } from '../../../server/config.ts';
import { LANGUAGE_PACKS, languageWarnings } from '../../../features/agents/language.ts';

test('language zh switches prompt, texts, ASR hint and espeak voice together', () => {
  const c = ConfigSchema.parse({ language: 'zh', asr: { provider: 'openai', baseURL: 'http://asr.example/v1' } });
  assert.equal(c.tts.provider === 'espeak' && c.tts.voice, 'cmn-latn-pinyin');
  assert.equal(c.asr.provider === 'openai' && c.asr.language, 'zh');
  assert.equal(c.llm.systemPrompt, LANGUAGE_PACKS.zh.systemPrompt);
  assert.equal(c.conversation.apologies.llm, LANGUAGE_PACKS.zh.conversation.apologies.llm);
  assert.equal(c.conversation.greeting, LANGUAGE_PACKS.zh.conversation.greeting);
  assert.match(c.conversation.apology, /[\u4e00-\u9fff]/);
});

test('keys set explicitly win over the language', () => {
  const c = ConfigSchema.parse({
    language: 'zh',
    tts: { provider: 'espeak', voice: 'cmn' },
    conversation: { greeting: 'Hello', apologies: { tts: 'TTS down' } },
    llm: { systemPrompt: 'Be brief.' },
  });
  assert.equal(c.tts.provider === 'espeak' && c.tts.voice, 'cmn');
  assert.equal(c.conversation.greeting, 'Hello');
  assert.equal(c.conversation.apologies.tts, 'TTS down');
  assert.equal(c.conversation.apologies.llm, LANGUAGE_PACKS.zh.conversation.apologies.llm);
  assert.equal(c.llm.systemPrompt, 'Be brief.');
});

test('English stays the default; an unknown language is rejected with the key named', () => {
  const c = ConfigSchema.parse({});
  assert.equal(c.language, 'en');
  assert.equal(c.tts.provider === 'espeak' && c.tts.voice, 'en-us');
  const bad = ConfigSchema.safeParse({ language: 'fr' });
  assert.equal(bad.success, false);
  assert.deepEqual(bad.error?.issues[0]?.path, ['language']);
});

test('language zh with the embedded ASR is warned about, naming asr.provider; an OpenAI-compatible ASR or English is not', () => {
  const zh = ConfigSchema.parse({ language: 'zh' });
  const w = languageWarnings(zh);
  assert.deepEqual(
    w.map((x) => x.key),
    ['asr.provider'],
  );
  assert.match(w[0]?.message ?? '', /pocketsphinx/);
  assert.deepEqual(
    languageWarnings(
      ConfigSchema.parse({ language: 'zh', asr: { provider: 'openai', baseURL: 'http://asr.example/v1' } }),
    ),
    [],
  );
  assert.deepEqual(languageWarnings(ConfigSchema.parse({})), []);
  // A model of the operator's own (a Mandarin acoustic model) is taken at its word.
  assert.deepEqual(
    languageWarnings(ConfigSchema.parse({ language: 'zh', asr: { provider: 'pocketsphinx', hmm: '/models/zh-cn' } })),
    [],
  );
});

test('the language hint also reaches a streaming recogniser that takes one, and not one that does not', () => {
  const rt = ConfigSchema.parse({
    language: 'zh',
    asr: { provider: 'openai-realtime', baseURL: 'https://rt.example/v1' },
  });
  assert.equal(rt.asr.provider === 'openai-realtime' && rt.asr.language, 'zh');
  const volc = ConfigSchema.parse({ language: 'zh', asr: { provider: 'volcengine', appKey: 'a', accessKey: 'b' } });
  assert.equal(
    volc.asr.provider === 'volcengine' && volc.asr.language,
    undefined,
    'volcengine refuses language on its streaming URLs',
  );
});
