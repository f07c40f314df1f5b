/** Agents as the API shows them (no API key ever) and how a settings patch merges. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agentView, apiKeysOf, mergeSettings } from '../../../features/admin/agent-views.ts';
import { AgentSettingsPatchSchema } from '../../../features/admin/schemas.ts';

const row = (settings: Record<string, unknown>) => ({ name: 'kitchen', settings, createdAt: 't0', updatedAt: 't1' });

test('the view drops every API key and says which are set', () => {
  const v = agentView(
    row({
      systemPrompt: 'You are a cook.',
      llm: { model: 'm', apiKey: 'sk-llm-secret-1' },
      tts: {
        provider: 'openai',
        baseURL: 'http://tts.example/v1',
        apiKey: 'sk-tts-secret-2',
        model: 'tts-1',
        voice: 'nova',
        format: 'wav',
        pcmSampleRate: 24000,
        timeoutMs: 30000,
      },
    }),
  );
  assert.equal(JSON.stringify(v).includes('secret'), false);
  assert.deepEqual(v.settings.llm, { model: 'm' });
  assert.equal(v.apiKeySet, true);
  assert.equal(v.ttsApiKeySet, true);
  assert.equal(v.asrApiKeySet, false);
  assert.equal(
    agentView(row({ llm: { apiKey: 'k-only-0001' } })).settings.llm,
    undefined,
    'an llm block holding only the key disappears',
  );
  assert.equal(agentView(row({})).apiKeySet, false);
  assert.deepEqual(apiKeysOf({ llm: { apiKey: 'a1' }, tts: { apiKey: '' }, asr: { apiKey: 'c3' } }), ['a1', 'c3']);
});

test('a patch replaces given keys, removes null ones, keeps the rest; llm merges key by key', () => {
  const current = { systemPrompt: 'old', greeting: 'hi', llm: { model: 'm1', apiKey: 'sk-1', temperature: 0.5 } };
  const patch = AgentSettingsPatchSchema.parse({
    systemPrompt: 'new',
    greeting: null,
    llm: { model: 'm2', temperature: null },
  });
  assert.deepEqual(mergeSettings(current, patch), { systemPrompt: 'new', llm: { model: 'm2', apiKey: 'sk-1' } });
  assert.deepEqual(mergeSettings(current, AgentSettingsPatchSchema.parse({ llm: null })), {
    systemPrompt: 'old',
    greeting: 'hi',
  });
  assert.deepEqual(
    mergeSettings({ llm: { apiKey: 'sk-1' } }, AgentSettingsPatchSchema.parse({ llm: { apiKey: null } })),
    {},
  );
});

test('a tts block given back without its key keeps the stored key for the same provider only', () => {
  const tts = { provider: 'openai', baseURL: 'http://tts.example/v1', apiKey: 'sk-tts', voice: 'nova' };
  const same = mergeSettings(
    { tts },
    AgentSettingsPatchSchema.parse({ tts: { provider: 'openai', baseURL: 'http://tts.example/v1', voice: 'alloy' } }),
  );
  assert.equal((same.tts as Record<string, unknown>).apiKey, 'sk-tts');
  assert.equal((same.tts as Record<string, unknown>).voice, 'alloy');
  const other = mergeSettings({ tts }, AgentSettingsPatchSchema.parse({ tts: { provider: 'espeak', voice: 'en-gb' } }));
  assert.equal((other.tts as Record<string, unknown>).apiKey, undefined);
});

test("a vendor's own credential fields (not only apiKey) are write-only too, and kept for the same provider", () => {
  const asr = { provider: 'volcengine', appKey: 'app-secret-3', accessKey: 'access-secret-4', language: 'zh-CN' };
  const v = agentView(row({ asr }));
  assert.equal(JSON.stringify(v).includes('secret'), false, 'no credential in the view');
  assert.deepEqual(v.settings.asr, { provider: 'volcengine', language: 'zh-CN' });
  assert.equal(v.asrApiKeySet, true);
  assert.deepEqual(apiKeysOf({ asr }).sort(), ['access-secret-4', 'app-secret-3']);
  const patch = { asr: { provider: 'volcengine', language: 'en-US' } } as unknown as Parameters<
    typeof mergeSettings
  >[1];
  assert.deepEqual(mergeSettings({ asr }, patch).asr, {
    provider: 'volcengine',
    language: 'en-US',
    appKey: 'app-secret-3',
    accessKey: 'access-secret-4',
  });
});

test("an agent's vision key is write-only like its llm key, and kept when a patch changes the model", () => {
  const v = agentView(row({ vision: { model: 'qwen2.5vl:3b', apiKey: 'sk-vision-secret-9' }, llm: { images: true } }));
  assert.equal(JSON.stringify(v).includes('secret'), false);
  assert.deepEqual(v.settings.vision, { model: 'qwen2.5vl:3b' });
  assert.equal(v.visionApiKeySet, true);
  assert.equal(v.apiKeySet, false);
  assert.deepEqual(apiKeysOf({ vision: { apiKey: 'v1' } }), ['v1']);
  const merged = mergeSettings(
    { vision: { model: 'a', apiKey: 'sk-v' } },
    AgentSettingsPatchSchema.parse({ vision: { model: 'b' }, llm: { images: true } }),
  );
  assert.deepEqual(merged, { vision: { model: 'b', apiKey: 'sk-v' }, llm: { images: true } });
});
