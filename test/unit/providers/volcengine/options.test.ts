/** The `asr` block with `provider: volcengine`: defaults, refusals, and its credentials kept out of logs. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { configSecrets } from '../../../../core/config-secrets.ts';
import { SecretValues } from '../../../../core/secret-values.ts';
import { registerConfigSecrets } from '../../../../core/config-secrets.ts';
import { AsrSchema } from '../../../../providers/index.ts';
import { ConfigSchema } from '../../../../server/config.ts';
import { createLogger } from '../../../../server/logger.ts';
import { createLogSink } from '../../../helpers/log-sink.ts';

const KEYS = { appKey: '1234567890', accessKey: 'AcCeSs-ToKeN-0123456789abcdef' };

describe('volcengine ASR options', () => {
  test('only the two credentials are required; the rest defaults to the bigmodel_async endpoint and the documented settings', () => {
    assert.deepEqual(AsrSchema.parse({ provider: 'volcengine', ...KEYS }), {
      provider: 'volcengine',
      ...KEYS,
      url: 'wss://openspeech.bytedance.com/api/v3/sauc/bigmodel_async',
      resourceId: 'volc.bigasr.sauc.duration',
      enableItn: true,
      enablePunc: true,
      packetMs: 200,
      connectTimeoutMs: 5000,
      finalTimeoutMs: 3000,
    });
  });

  test('refuses an unknown key, missing credentials, a non-WebSocket URL, and packets outside 20–1000 ms', () => {
    const bad: Array<[Record<string, unknown>, RegExp]> = [
      [{ ...KEYS, apiKey: 'x' }, /apiKey/],
      [{ appKey: 'x' }, /accessKey/],
      [{ accessKey: 'x' }, /appKey/],
      [{ ...KEYS, url: 'https://openspeech.bytedance.com/api/v3/sauc/bigmodel' }, /ws:\/\/ or wss:\/\//],
      [{ ...KEYS, packetMs: 10 }, /packetMs/],
      [{ ...KEYS, packetMs: 2000 }, /packetMs/],
    ];
    for (const [block, message] of bad) {
      const r = AsrSchema.safeParse({ provider: 'volcengine', ...block });
      assert.equal(r.success, false, JSON.stringify(block));
      assert.match(JSON.stringify(r.error?.issues), message, JSON.stringify(block));
    }
  });

  test('language is taken only with the bigmodel_nostream endpoint, the one that reads it', () => {
    const refused = AsrSchema.safeParse({ provider: 'volcengine', ...KEYS, language: 'en-US' });
    assert.equal(refused.success, false);
    assert.match(refused.error?.issues[0]?.message ?? '', /bigmodel_nostream/);
    const ok = AsrSchema.parse({
      provider: 'volcengine',
      ...KEYS,
      url: 'wss://openspeech.bytedance.com/api/v3/sauc/bigmodel_nostream',
      language: 'en-US',
    });
    assert.equal(ok.provider === 'volcengine' && ok.language, 'en-US');
  });

  test('appKey and accessKey are registered as secrets and redacted from every log line', () => {
    const config = ConfigSchema.parse({ asr: { provider: 'volcengine', ...KEYS } });
    const paths = configSecrets(config).map((s) => s.path);
    assert.ok(paths.includes('asr.appKey') && paths.includes('asr.accessKey'), paths.join(', '));
    const secrets = new SecretValues();
    registerConfigSecrets(secrets, config);
    const sink = createLogSink();
    const log = createLogger({ level: 'debug', logContent: true, destination: sink.stream, secrets });
    log.warn({ err: `handshake with X-Api-Access-Key: ${KEYS.accessKey}, X-Api-App-Key: ${KEYS.appKey}` }, 'x');
    assert.ok(!sink.text().includes(KEYS.accessKey) && !sink.text().includes(KEYS.appKey), sink.text());
  });
});
