import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AsrSchema } from '../../../../providers/index.ts';
import { OpenAiRealtimeAsrSchema } from '../../../../providers/openai-realtime/options.ts';

test('openai-realtime options: the defaults', () => {
  assert.deepEqual(AsrSchema.parse({ provider: 'openai-realtime' }), {
    provider: 'openai-realtime',
    baseURL: 'https://api.openai.com/v1',
    apiKey: '',
    azure: false,
    model: 'gpt-live-transcribe',
    finalTimeoutMs: 3000,
    connectTimeoutMs: 5000,
  });
});

test('openai-realtime options: what is refused', () => {
  const refused = (o: Record<string, unknown>): string[] => {
    const r = OpenAiRealtimeAsrSchema.safeParse({ provider: 'openai-realtime', ...o });
    assert.equal(r.success, false, JSON.stringify(o));
    return r.error!.issues.map((i) => i.path.join('.'));
  };
  assert.deepEqual(refused({ timeoutMs: 100 }), ['']); // an unknown key (the batch provider's)
  assert.deepEqual(refused({ baseURL: 'ftp://asr.example/v1' }), ['baseURL']);
  assert.deepEqual(refused({ baseURL: 'http://127.0.0.1:9000/v1', ca: '/etc/ca.pem' }), ['ca']);
  assert.deepEqual(refused({ azure: true }), ['apiKey']);
  assert.deepEqual(refused({ finalTimeoutMs: 0 }), ['finalTimeoutMs']);
  assert.deepEqual(refused({ connectTimeoutMs: 1.5 }), ['connectTimeoutMs']);
  assert.deepEqual(refused({ model: '' }), ['model']);
});

test('openai-realtime options: plain and TLS base URLs of every scheme are taken', () => {
  for (const baseURL of ['http://a:1/v1', 'ws://a/v1', 'https://a/v1', 'wss://a/v1'])
    assert.equal(OpenAiRealtimeAsrSchema.parse({ provider: 'openai-realtime', baseURL }).baseURL, baseURL);
  assert.equal(
    OpenAiRealtimeAsrSchema.parse({ provider: 'openai-realtime', baseURL: 'wss://a/v1', ca: './ca.pem' }).ca,
    './ca.pem',
  );
});
