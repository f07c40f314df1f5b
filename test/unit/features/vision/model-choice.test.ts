import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chooseVisionModel } from '../../../../features/vision/model-choice.ts';

const cfg = { baseURL: 'http://vl.local/v1', apiKey: 'k-vl', model: 'qwen2.5vl:7b' };
const chat = { baseURL: 'http://chat.local/v1', apiKey: 'k-chat', model: 'chat-model' };

test("an agent's photos: its chat model with llm.images, else its vision fields over the configuration's", () => {
  assert.deepEqual(chooseVisionModel(cfg, chat, undefined), { model: cfg, source: 'config' });
  assert.deepEqual(chooseVisionModel(cfg, chat, { llm: { images: true, model: 'gpt-4o-mini' } }), {
    model: { ...chat, model: 'gpt-4o-mini' },
    source: 'chat',
  });
  assert.deepEqual(chooseVisionModel(cfg, chat, { vision: { model: 'qwen2.5vl:3b' } }), {
    model: { ...cfg, model: 'qwen2.5vl:3b' },
    source: 'agent',
  });
  // llm.images wins over the agent's vision block.
  assert.equal(chooseVisionModel(cfg, chat, { llm: { images: true }, vision: { model: 'x' } })?.source, 'chat');
  // Invalid agent settings: the configuration's.
  assert.deepEqual(chooseVisionModel(cfg, chat, { vision: { nope: 1 } }), { model: cfg, source: 'config' });
});

test('no base URL or model anywhere: none', () => {
  assert.equal(chooseVisionModel({ baseURL: '', apiKey: '', model: '' }, chat, undefined), null);
  assert.equal(chooseVisionModel({ ...cfg, model: '' }, chat, { vision: { baseURL: 'http://x/v1' } }), null);
});
