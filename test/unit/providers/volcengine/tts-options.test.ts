/** The `tts` block with `provider: volcengine`: defaults, refusals, the request it makes, and its credentials kept out of logs. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { configSecrets } from '../../../../core/config-secrets.ts';
import { TtsSchema } from '../../../../providers/index.ts';
import {
  startSessionPayload,
  taskRequestPayload,
  ttsReqParams,
} from '../../../../providers/volcengine/tts-messages.ts';
import { VolcengineTtsSchema } from '../../../../providers/volcengine/tts-options.ts';
import { ConfigSchema } from '../../../../server/config.ts';

const KEYS = { appKey: '1234567890', accessKey: 'AcCeSs-ToKeN-0123456789abcdef' };

describe('volcengine TTS options', () => {
  test('only credentials are required; the rest defaults to the bidirection endpoint, a 1.0 voice and 24 kHz PCM', () => {
    assert.deepEqual(TtsSchema.parse({ provider: 'volcengine', ...KEYS }), {
      provider: 'volcengine',
      ...KEYS,
      url: 'wss://openspeech.bytedance.com/api/v3/tts/bidirection',
      resourceId: 'seed-tts-1.0',
      voice: 'zh_female_wanwanxiaohe_moon_bigtts',
      format: 'pcm',
      sampleRate: 24_000,
      keepAliveMs: 15_000,
      connectTimeoutMs: 5000,
      timeoutMs: 10_000,
      maxChars: 4000,
    });
    assert.equal(TtsSchema.parse({ provider: 'volcengine', apiKey: 'k' }).provider, 'volcengine');
  });

  test('refuses an unknown key, missing or half credentials, a non-WebSocket URL, an undocumented rate, rates out of range', () => {
    const bad: Array<[Record<string, unknown>, RegExp]> = [
      [{ ...KEYS, speaker: 'x' }, /speaker/],
      [{}, /apiKey/],
      [{ appKey: 'x' }, /appKey and accessKey/],
      [{ accessKey: 'x' }, /appKey and accessKey/],
      [{ ...KEYS, url: 'https://openspeech.bytedance.com/api/v3/tts/bidirection' }, /ws:\/\/ or wss:\/\//],
      [{ ...KEYS, sampleRate: 11_025 }, /sampleRate must be one of/],
      [{ ...KEYS, speechRate: 101 }, /speechRate/],
      [{ ...KEYS, loudnessRate: -51 }, /loudnessRate/],
      [{ ...KEYS, emotionScale: 6 }, /emotionScale/],
      [{ ...KEYS, format: 'wav' }, /format/],
      [{ ...KEYS, maxChars: 0 }, /maxChars/],
    ];
    for (const [block, message] of bad) {
      const r = TtsSchema.safeParse({ provider: 'volcengine', ...block });
      assert.equal(r.success, false, JSON.stringify(block));
      assert.match(JSON.stringify(r.error?.issues), message, JSON.stringify(block));
    }
  });

  test('the settings go in req_params: audio_params with what is set, additions as a JSON string; TaskRequest adds the text', () => {
    const o = VolcengineTtsSchema.parse({
      provider: 'volcengine',
      ...KEYS,
      voice: 'zh_male_x_moon_bigtts',
      model: 'seed-tts-1.1',
      sampleRate: 16_000,
      speechRate: -10,
      loudnessRate: 20,
      emotion: 'sad',
      emotionScale: 3,
      additions: { explicit_language: 'zh', post_process: { pitch: 2 } },
    });
    const params = ttsReqParams(o);
    assert.deepEqual(params, {
      speaker: 'zh_male_x_moon_bigtts',
      model: 'seed-tts-1.1',
      audio_params: {
        format: 'pcm',
        sample_rate: 16_000,
        speech_rate: -10,
        loudness_rate: 20,
        emotion: 'sad',
        emotion_scale: 3,
      },
      additions: '{"explicit_language":"zh","post_process":{"pitch":2}}',
    });
    assert.deepEqual(startSessionPayload(params), {
      user: { uid: 'xiaozhi-ts-server' },
      event: 100,
      namespace: 'BidirectionalTTS',
      req_params: params,
    });
    assert.deepEqual(taskRequestPayload(params, '你好'), {
      user: { uid: 'xiaozhi-ts-server' },
      event: 200,
      namespace: 'BidirectionalTTS',
      req_params: { ...params, text: '你好' },
    });
  });

  test('appKey, accessKey and apiKey are registered as secrets', () => {
    const config = ConfigSchema.parse({ tts: { provider: 'volcengine', ...KEYS, apiKey: 'the-api-key' } });
    const paths = configSecrets(config).map((s) => s.path);
    for (const p of ['tts.appKey', 'tts.accessKey', 'tts.apiKey']) assert.ok(paths.includes(p), paths.join(', '));
  });
});
