/** The `tts` block with `provider: cosyvoice`: defaults, refusals, the commands built from it, and its key kept out of logs. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { configSecrets, registerConfigSecrets } from '../../../../core/config-secrets.ts';
import { SecretValues } from '../../../../core/secret-values.ts';
import {
  DashscopeEventSchema,
  continueTask,
  finishTask,
  runTask,
  sentenceText,
} from '../../../../providers/dashscope/messages.ts';
import { CosyVoiceTtsSchema } from '../../../../providers/dashscope/tts-options.ts';
import { TtsSchema } from '../../../../providers/index.ts';
import { ConfigSchema } from '../../../../server/config.ts';
import { createLogger } from '../../../../server/logger.ts';
import { createLogSink } from '../../../helpers/log-sink.ts';

const KEY = 'sk-0123456789abcdef0123456789abcdef';

describe('cosyvoice TTS options', () => {
  test('only the API key is required; the rest defaults to Beijing, cosyvoice-v2 and raw PCM at 24 kHz', () => {
    assert.deepEqual(TtsSchema.parse({ provider: 'cosyvoice', apiKey: KEY }), {
      provider: 'cosyvoice',
      apiKey: KEY,
      url: 'wss://dashscope.aliyuncs.com/api-ws/v1/inference',
      model: 'cosyvoice-v2',
      voice: 'longxiaochun_v2',
      format: 'pcm',
      sampleRate: 24000,
      maxChars: 4000,
      connectTimeoutMs: 5000,
      timeoutMs: 10000,
      keepAliveMs: 15000,
    });
  });

  test('refuses an unknown key, no key, a non-WebSocket URL, a rate the service lacks, settings out of range', () => {
    const bad: Array<[Record<string, unknown>, RegExp]> = [
      [{ apiKey: KEY, speed: 1 }, /speed/],
      [{}, /apiKey/],
      [{ apiKey: '' }, /apiKey/],
      [{ apiKey: KEY, url: 'https://dashscope.aliyuncs.com/api-ws/v1/inference' }, /ws:\/\/ or wss:\/\//],
      [{ apiKey: KEY, sampleRate: 32000 }, /sampleRate must be one of/],
      [{ apiKey: KEY, rate: 3 }, /rate/],
      [{ apiKey: KEY, pitch: 0.1 }, /pitch/],
      [{ apiKey: KEY, volume: 101 }, /volume/],
      [{ apiKey: KEY, format: 'wav' }, /format/],
      [{ apiKey: KEY, maxChars: 20001 }, /maxChars/],
      [{ apiKey: KEY, keepAliveMs: 60000 }, /keepAliveMs/],
    ];
    for (const [block, message] of bad) {
      const r = TtsSchema.safeParse({ provider: 'cosyvoice', ...block });
      assert.equal(r.success, false, JSON.stringify(block));
      assert.match(JSON.stringify(r.error?.issues), message, JSON.stringify(block));
    }
  });

  test('run-task carries the model, voice and audio settings, and only the optional ones that are set', () => {
    const o = CosyVoiceTtsSchema.parse({
      provider: 'cosyvoice',
      apiKey: KEY,
      model: 'cosyvoice-v3-flash',
      voice: 'longanyang',
      pitch: 0.9,
      instruction: '用开心的语气说',
      languageHints: ['zh'],
    });
    assert.deepEqual(JSON.parse(runTask(o, 'abc')), {
      header: { action: 'run-task', task_id: 'abc', streaming: 'duplex' },
      payload: {
        task_group: 'audio',
        task: 'tts',
        function: 'SpeechSynthesizer',
        model: 'cosyvoice-v3-flash',
        parameters: {
          text_type: 'PlainText',
          voice: 'longanyang',
          format: 'pcm',
          sample_rate: 24000,
          pitch: 0.9,
          instruction: '用开心的语气说',
          language_hints: ['zh'],
        },
        input: {},
      },
    });
    assert.deepEqual(JSON.parse(continueTask('abc', '你好')), {
      header: { action: 'continue-task', task_id: 'abc', streaming: 'duplex' },
      payload: { input: { text: '你好' } },
    });
    assert.deepEqual(JSON.parse(finishTask('abc')).payload, { input: {} });
    assert.deepEqual(JSON.parse(finishTask('abc', true)).payload, { input: { directive: 'cancel' } });
  });

  test("a sentence's text is its original_text, else its words", () => {
    const begin = (output: object) =>
      DashscopeEventSchema.parse({ header: { event: 'result-generated', task_id: 't' }, payload: { output } });
    assert.equal(
      sentenceText(begin({ type: 'sentence-begin', original_text: '你好。', sentence: { words: [] } })),
      '你好。',
    );
    assert.equal(
      sentenceText(begin({ type: 'sentence-begin', sentence: { index: 0, words: [{ text: '你' }, { text: '好' }] } })),
      '你好',
    );
  });

  test('apiKey is registered as a secret and redacted from every log line', () => {
    const config = ConfigSchema.parse({ tts: { provider: 'cosyvoice', apiKey: KEY } });
    assert.ok(configSecrets(config).some((s) => s.path === 'tts.apiKey'));
    const secrets = new SecretValues();
    registerConfigSecrets(secrets, config);
    const sink = createLogSink();
    const log = createLogger({ level: 'debug', logContent: true, destination: sink.stream, secrets });
    log.warn({ err: `handshake with Authorization: Bearer ${KEY}` }, 'x');
    assert.ok(!sink.text().includes(KEY), sink.text());
  });
});
