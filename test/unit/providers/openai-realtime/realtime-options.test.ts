import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RealtimeSchema, REALTIME_PROVIDERS } from '../../../../providers/index.ts';

test('realtime model options: the defaults of the openai dialect', () => {
  assert.deepEqual(RealtimeSchema.parse({ provider: 'openai-realtime' }), {
    provider: 'openai-realtime',
    dialect: 'openai',
    baseURL: 'https://api.openai.com/v1',
    apiKey: '',
    model: 'gpt-realtime',
    voice: 'marin',
    connectTimeoutMs: 5000,
    responseTimeoutMs: 15_000,
    maxSessionMs: 55 * 60_000,
    maxAudioSecondsPerMinute: 90,
    maxFunctionCallsPerResponse: 8,
  });
});

test('realtime model options: qwen-omni takes its own URL, model, voice and session length', () => {
  const o = RealtimeSchema.parse({ provider: 'openai-realtime', dialect: 'qwen-omni', apiKey: 'sk-d' });
  assert.equal(o.baseURL, 'https://dashscope.aliyuncs.com/api-ws/v1');
  assert.equal(o.model, 'qwen3-omni-flash-realtime');
  assert.equal(o.voice, 'Cherry');
  assert.equal(o.maxSessionMs, 115 * 60_000);
  // What is written wins over the dialect's default.
  const w = RealtimeSchema.parse({
    provider: 'openai-realtime',
    dialect: 'qwen-omni',
    baseURL: 'wss://dashscope-intl.aliyuncs.com/api-ws/v1',
    model: 'qwen-omni-turbo-realtime',
    voice: 'Chelsie',
    maxSessionMs: 60_000,
  });
  assert.deepEqual(
    [w.baseURL, w.model, w.voice, w.maxSessionMs],
    ['wss://dashscope-intl.aliyuncs.com/api-ws/v1', 'qwen-omni-turbo-realtime', 'Chelsie', 60_000],
  );
});

test('realtime model options: what is refused', () => {
  const refused = (o: Record<string, unknown>): string[] => {
    const r = RealtimeSchema.safeParse({ provider: 'openai-realtime', ...o });
    assert.equal(r.success, false, JSON.stringify(o));
    return r.error!.issues.map((i) => i.path.join('.'));
  };
  assert.deepEqual(refused({ language: 'en' }), ['']); // an unknown key
  assert.deepEqual(refused({ dialect: 'doubao' }), ['dialect']);
  assert.deepEqual(refused({ baseURL: 'ftp://rt.example/v1' }), ['baseURL']);
  assert.deepEqual(refused({ baseURL: 'ws://127.0.0.1:9000/v1', ca: '/etc/ca.pem' }), ['ca']);
  assert.deepEqual(refused({ dialect: 'azure', apiKey: 'k' }), ['baseURL']);
  assert.deepEqual(refused({ dialect: 'azure', baseURL: 'https://r.openai.azure.com/openai/v1' }), ['apiKey']);
  assert.deepEqual(refused({ responseTimeoutMs: 0 }), ['responseTimeoutMs']);
  assert.deepEqual(refused({ connectTimeoutMs: 1.5 }), ['connectTimeoutMs']);
  assert.deepEqual(refused({ maxSessionMs: -1 }), ['maxSessionMs']);
  assert.deepEqual(refused({ model: '' }), ['model']);
  assert.deepEqual(refused({ voice: '' }), ['voice']);
  assert.deepEqual(refused({ instructions: 'x'.repeat(8001) }), ['instructions']);
  assert.deepEqual(refused({ provider: 'other' }), ['provider']);
});

test('realtime model options: the start-up check asks only OpenAI itself', () => {
  const p = REALTIME_PROVIDERS['openai-realtime'];
  const parse = (o: Record<string, unknown>) => RealtimeSchema.parse({ provider: 'openai-realtime', ...o });
  assert.deepEqual(p.endpoint(parse({ apiKey: 'sk' })), { baseURL: 'https://api.openai.com/v1', apiKey: 'sk' });
  assert.deepEqual(p.endpoint(parse({ baseURL: 'ws://127.0.0.1:8/v1' })), {
    baseURL: 'http://127.0.0.1:8/v1',
    apiKey: '',
  });
  assert.equal(p.endpoint(parse({ dialect: 'qwen-omni' })), undefined);
  assert.equal(
    p.endpoint(parse({ dialect: 'azure', baseURL: 'https://r.openai.azure.com/openai/v1', apiKey: 'k' })),
    undefined,
  );
});

test('realtime model options: waits and the session age are bounded (a timer past 2^31-1 ms would fire at once)', () => {
  const refused = (o: Record<string, unknown>) => {
    const r = RealtimeSchema.safeParse({ provider: 'openai-realtime', ...o });
    return r.success ? [] : r.error.issues.map((i) => i.path.join('.'));
  };
  assert.deepEqual(refused({ maxSessionMs: 3_000_000_000 }), ['maxSessionMs']);
  assert.deepEqual(refused({ maxSessionMs: 24 * 3_600_000 + 1 }), ['maxSessionMs']);
  assert.deepEqual(refused({ responseTimeoutMs: 3_000_000_000 }), ['responseTimeoutMs']);
  assert.deepEqual(refused({ connectTimeoutMs: 3_000_000_000 }), ['connectTimeoutMs']);
  assert.deepEqual(refused({ maxSessionMs: 24 * 3_600_000, responseTimeoutMs: 600_000, connectTimeoutMs: 60_000 }), []);
});
