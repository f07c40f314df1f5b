/**
 * Secrets are redacted by their value wherever they appear in a log line, not
 * only under known keys: percent-encoded query keys, provider error text echoing the key, child
 * stderr passed through as a string.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { SecretValues } from '../../../core/secret-values.ts';
import { createLogger } from '../../../server/logger.ts';
import { redactUrl, redactUrlsInText } from '../../../core/redact-url.ts';
import { registerConfigSecrets } from '../../../core/config-secrets.ts';
import { ConfigSchema } from '../../../server/config.ts';
import { createLogSink } from '../../helpers/log-sink.ts';

const KEY = 'sk-test-0123456789abcdefXYZ';
const TOKEN = 'dev/token+with spaces&odd=chars';

describe('secret values', () => {
  test('redacts a value, its percent-encoded and JSON-escaped forms', () => {
    const s = new SecretValues();
    s.add(TOKEN);
    const text = `a ${TOKEN} b ${encodeURIComponent(TOKEN)} c ${JSON.stringify(TOKEN)}`;
    const out = s.redact(text);
    assert.ok(!out.includes('token+with'), out);
    assert.ok(!out.includes(encodeURIComponent(TOKEN)), out);
    assert.equal(out.match(/\[Redacted\]/g)?.length, 3);
  });

  test("ignores values too short to be secrets and keeps a bounded number of issued ones, never evicting the configuration's", () => {
    const s = new SecretValues({ maxValues: 3 });
    s.add('');
    s.add('abc');
    assert.equal(s.redact('abc'), 'abc');
    s.add(KEY);
    s.add(TOKEN);
    for (let i = 0; i < 10; i++) s.add(`issued-token-${i}`, { issued: true });
    assert.equal(s.size, 5);
    assert.equal(
      s.redact(`${KEY} ${TOKEN} issued-token-0 issued-token-9`),
      '[Redacted] [Redacted] issued-token-0 [Redacted]',
    );
  });

  test('word-shaped values (issued tokens) are found inside longer runs, beside other secrets, in every written form', () => {
    const s = new SecretValues();
    const tok = 'AbC_def-0123456789xyzXYZ';
    s.add(tok, { issued: true });
    s.add('short-secret');
    s.add(TOKEN);
    assert.equal(s.redact(`{"password":"${tok}"}`), '{"password":"[Redacted]"}');
    assert.equal(s.redact(`/x?p=${encodeURIComponent(tok)}&q=1`), '/x?p=[Redacted]&q=1');
    assert.equal(s.redact(`pre${tok}post`), 'pre[Redacted]post');
    assert.equal(
      s.redact(`${tok}${tok} and short-secret and ${TOKEN}`),
      '[Redacted][Redacted] and [Redacted] and [Redacted]',
    );
    assert.equal(s.redact('nothing secret here'), 'nothing secret here');
  });

  test('thousands of issued tokens: a line is redacted without a pattern of all of them', () => {
    const s = new SecretValues();
    for (let i = 0; i < 20_000; i++) s.add(`tok${String(i).padStart(40, '0')}`, { issued: true });
    const line = `{"msg":"hello","password":"tok${String(12_345).padStart(40, '0')}","n":1}`;
    const started = process.hrtime.bigint();
    for (let i = 0; i < 1000; i++) assert.equal(s.redact(line), '{"msg":"hello","password":"[Redacted]","n":1}');
    // Generous: the old one-pattern form took seconds to compile at this size.
    assert.ok(Number(process.hrtime.bigint() - started) / 1e6 < 2000);
  });

  test('the longest value wins when one secret contains another', () => {
    const s = new SecretValues();
    s.add('abcdefgh');
    s.add('abcdefgh-ijkl');
    assert.equal(s.redact('x abcdefgh-ijkl y'), 'x [Redacted] y');
  });
});

describe('the logger redacts every line by value', () => {
  function setup(): { sink: ReturnType<typeof createLogSink>; log: ReturnType<typeof createLogger> } {
    const config = ConfigSchema.parse({ llm: { apiKey: KEY }, server: { auth: { tokens: [TOKEN] } } });
    const secrets = new SecretValues();
    registerConfigSecrets(secrets, config);
    const sink = createLogSink();
    const log = createLogger({ level: 'debug', logContent: true, destination: sink.stream, secrets });
    return { sink, log };
  }

  test('an LLM 401 body that echoes the API key is logged without it', () => {
    const { sink, log } = setup();
    const body = `{"error":{"message":"Incorrect API key provided: ${KEY}. You can find your API key at ..."}}`;
    log.error({ err: new Error(`401 ${body}`), body }, 'llm request failed');
    assert.ok(!sink.text().includes(KEY), sink.text());
    assert.ok(sink.text().includes('[Redacted]'));
  });

  test('a token in a URL under a percent-encoded query key is logged without it', () => {
    const { sink, log } = setup();
    log.info({ url: `/xiaozhi/v1/?%61uthorization=Bearer%20${encodeURIComponent(TOKEN)}` }, 'request');
    log.info(`child stderr: auth failed for ${TOKEN}`);
    assert.ok(!sink.text().includes(encodeURIComponent(TOKEN)), sink.text());
    assert.ok(!sink.text().includes(TOKEN));
  });

  test('redactUrl decodes query keys before matching them', () => {
    assert.equal(redactUrl('/x?%61uthorization=Bearer%20abc&device-id=1'), '/x?%61uthorization=[Redacted]&device-id=1');
    assert.equal(redactUrl('/x?TOKEN=abc'), '/x?TOKEN=[Redacted]');
  });

  test('redactUrl removes userinfo and credential query values, keeping host, path and other parameters', () => {
    assert.equal(
      redactUrl('http://user:s3cret@127.0.0.1:1/v1?api-key=k3y&model=m'),
      'http://[Redacted]@127.0.0.1:1/v1?api-key=[Redacted]&model=m',
    );
    assert.equal(
      redactUrl('https://ghp_abc@host/x?key=1&access_token=2&password=3'),
      'https://[Redacted]@host/x?key=[Redacted]&access_token=[Redacted]&password=[Redacted]',
    );
    assert.equal(redactUrl('http://127.0.0.1:11434/v1'), 'http://127.0.0.1:11434/v1');
  });

  test('URLs inside free text and inside any finished log line lose their credentials', () => {
    assert.equal(
      redactUrlsInText('failed: http://u:pw@h/p?token=t0k retrying'),
      'failed: http://[Redacted]@h/p?token=[Redacted] retrying',
    );
    const { sink, log } = setup();
    log.error({ err: 'cannot fetch http://user:s3cret@10.0.0.1/v1?api-key=k3y' }, 'mcp https://a:b3@c/d failed');
    assert.ok(!/s3cret|k3y|b3@/.test(sink.text()), sink.text());
    assert.match(sink.text(), /10\.0\.0\.1\/v1/);
  });

  test('credentials inside configured URLs are registered as secret values', () => {
    const secrets = new SecretValues();
    registerConfigSecrets(
      secrets,
      ConfigSchema.parse({ llm: { baseURL: 'http://user:longpass99@h/v1?api-key=longkey123' } }),
    );
    assert.equal(secrets.redact('echo longpass99 longkey123'), 'echo [Redacted] [Redacted]');
  });
});

describe('over a real WebSocket', () => {
  test('a token sent under a percent-encoded query key never reaches the log', async () => {
    const { startTestApp } = await import('../../helpers/test-app.ts');
    const { recordingConversation } = await import('../../helpers/recording-conversation.ts');
    const { DeviceSim } = await import('../../fixtures/device-sim.ts');
    const t = await startTestApp({
      createConversation: recordingConversation().factory,
      config: { server: { auth: { tokens: [TOKEN] } } },
    });
    try {
      const guess = 'stranger-guess-987654';
      for (const tok of [TOKEN, guess]) {
        const dev = new DeviceSim({ url: `${t.wsUrl}?%61uthorization=${encodeURIComponent(`Bearer ${tok}`)}` });
        await dev.opened.catch(() => {});
        if (tok === TOKEN) await dev.hello();
        dev.close();
        await dev.closed;
      }
      const text = t.logs.text();
      assert.ok(text.includes('%61uthorization'), 'the URL was logged');
      for (const tok of [TOKEN, encodeURIComponent(TOKEN), 'stranger-guess-987654'])
        assert.ok(!text.includes(tok), `${tok} in the log`);
    } finally {
      await t.close();
    }
  });
});
