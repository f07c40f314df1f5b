/**
 * A realtime agent through the admin API on the real app, with the store on SQLite and on a
 * throwaway PostgreSQL: created with its pipeline and realtime block, read back without the key
 * (`realtimeApiKeySet` says one is stored), patched (a block given without its key keeps the stored
 * one while the provider stays; null removes), a realtime pipeline with no block anywhere refused
 * naming the field, the key redacted from the logs, and the OpenAPI document naming the fields.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildApp, type App } from '../../../server/app.ts';
import { ConfigSchema } from '../../../server/config.ts';
import { createLogger } from '../../../server/logger.ts';
import { SecretValues } from '../../../core/secret-values.ts';
import { registerConfigSecrets } from '../../../core/config-secrets.ts';
import { recordingConversation } from '../../helpers/recording-conversation.ts';
import { createLogSink, type LogSink } from '../../helpers/log-sink.ts';
import { listenOnLoopback } from '../../helpers/listen.ts';
import { LOOPBACK_CLIENTS } from '../../helpers/test-app.ts';
import { postgresTarget, sqliteTarget } from '../../helpers/store-targets.ts';

const TOKEN = 'admin-token-for-realtime-tests-0123';
const KEY = 'sk-realtime-key-never-shown-7777';
const BLOCK = {
  provider: 'openai-realtime',
  dialect: 'qwen-omni',
  baseURL: 'wss://dashscope.example/api-ws/v1',
  apiKey: KEY,
  model: 'qwen3-omni-flash-realtime',
  voice: 'Cherry',
  instructions: 'Answer in one sentence.',
};

interface Server {
  app: App;
  logs: LogSink;
  call(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; text: string; json: Record<string, unknown> }>;
  close(): Promise<void>;
}

async function start(db: { url: string; dataDir: string }, top: Record<string, unknown> = {}): Promise<Server> {
  const config = ConfigSchema.parse({
    ...top,
    admin: { token: TOKEN },
    store: { url: db.url },
    server: { ...LOOPBACK_CLIENTS, dataDir: db.dataDir },
  });
  const logs = createLogSink();
  const secrets = new SecretValues();
  registerConfigSecrets(secrets, config);
  const log = createLogger({ level: 'debug', logContent: false, destination: logs.stream, secrets });
  const app = await buildApp({
    config,
    log,
    createConversation: recordingConversation().factory,
    onSecret: (v) => secrets.add(v),
  });
  const { httpUrl } = await listenOnLoopback(app);
  return {
    app,
    logs,
    async call(method, path, body) {
      const res = await fetch(`${httpUrl}/api/admin${path}`, {
        method,
        headers: {
          authorization: `Bearer ${TOKEN}`,
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      const text = await res.text();
      return { status: res.status, text, json: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
    },
    close: () => app.fastify.close(),
  };
}

const settingsOf = (r: { json: Record<string, unknown> }): Record<string, unknown> =>
  r.json.settings as Record<string, unknown>;

for (const target of [sqliteTarget(), postgresTarget()]) {
  describe(`realtime agents through the admin API on ${target.name}`, () => {
    after(() => target.close());

    test('create, read, patch a realtime agent; the key is stored, never returned nor logged', async () => {
      const s = await start(await target.fresh());
      try {
        const created = await s.call('POST', '/agents', {
          name: 'omni',
          settings: { systemPrompt: 'Be quick.', pipeline: 'realtime', realtime: BLOCK },
        });
        assert.equal(created.status, 201, created.text);
        assert.equal(created.json.realtimeApiKeySet, true);
        assert.equal(created.json.apiKeySet, false);
        assert.equal(created.text.includes(KEY), false);
        const rt = settingsOf(created).realtime as Record<string, unknown>;
        assert.equal(settingsOf(created).pipeline, 'realtime');
        assert.deepEqual(
          { dialect: rt.dialect, model: rt.model, voice: rt.voice, instructions: rt.instructions, apiKey: rt.apiKey },
          {
            dialect: 'qwen-omni',
            model: BLOCK.model,
            voice: 'Cherry',
            instructions: BLOCK.instructions,
            apiKey: undefined,
          },
        );

        const got = await s.call('GET', '/agents/omni');
        assert.equal(got.status, 200);
        assert.equal(got.text.includes(KEY), false);
        assert.equal(((await s.call('GET', '/agents')).json.agents as unknown[]).length, 1);

        // The block given again without its key (as the console sends it): the key stays.
        const { apiKey: _k, ...withoutKey } = BLOCK;
        const patched = await s.call('PATCH', '/agents/omni', {
          settings: { realtime: { ...withoutKey, voice: 'Chelsie' } },
        });
        assert.equal(patched.status, 200, patched.text);
        assert.equal((settingsOf(patched).realtime as Record<string, unknown>).voice, 'Chelsie');
        assert.equal(patched.json.realtimeApiKeySet, true, 'the key survives a voice change');
        const stored = await s.app.store.agents.get('omni');
        assert.equal((stored?.settings.realtime as Record<string, unknown>).apiKey, KEY, 'stored, only never shown');

        // Back to the cascade: the block is kept for the next switch.
        const cascade = await s.call('PATCH', '/agents/omni', { settings: { pipeline: 'cascade' } });
        assert.equal(settingsOf(cascade).pipeline, 'cascade');
        assert.equal(cascade.json.realtimeApiKeySet, true);

        // Without a block, and none in the configuration: refused naming the field.
        const noBlock = await s.call('PATCH', '/agents/omni', { settings: { pipeline: 'realtime', realtime: null } });
        assert.equal(noBlock.status, 400, noBlock.text);
        assert.equal(noBlock.json.field, 'body.settings.realtime');
        assert.match(String(noBlock.json.error), /needs a realtime block/);
        const bare = await s.call('POST', '/agents', { name: 'bare', settings: { pipeline: 'realtime' } });
        assert.equal(bare.status, 400);
        assert.equal(bare.json.field, 'body.settings.realtime');
        const badDialect = await s.call('PATCH', '/agents/omni', {
          settings: { realtime: { ...withoutKey, dialect: 'klingon' } },
        });
        assert.equal(badDialect.status, 400);
        assert.match(String(badDialect.json.field), /^body\.settings\.realtime/);

        // Another provider's block (here: the same one without a key after removal) does not inherit.
        const removed = await s.call('PATCH', '/agents/omni', { settings: { realtime: null } });
        assert.equal(removed.status, 200, removed.text);
        assert.equal(settingsOf(removed).realtime, undefined);
        assert.equal(removed.json.realtimeApiKeySet, false);

        s.app.fastify.log.warn({ echo: `key=${KEY}` }, 'realtime vendor said');
        assert.equal(s.logs.find('realtime vendor said').length, 1);
        assert.equal(s.logs.text().includes(KEY), false, 'registered for redaction by value');

        const doc = await s.call('GET', '/openapi.json');
        const view = JSON.stringify(doc.json);
        for (const field of ['realtimeApiKeySet', 'pipeline', 'qwen-omni', 'maxFunctionCallsPerResponse'])
          assert.ok(view.includes(field), `the OpenAPI document names ${field}`);
      } finally {
        await s.close();
      }
    });

    test("with the configuration's realtime block, an agent's realtime pipeline may leave its own out", async () => {
      const s = await start(await target.fresh(), {
        realtime: { provider: 'openai-realtime', baseURL: 'ws://127.0.0.1:9/v1' },
      });
      try {
        const created = await s.call('POST', '/agents', { name: 'rt', settings: { pipeline: 'realtime' } });
        assert.equal(created.status, 201, created.text);
        assert.equal(settingsOf(created).realtime, undefined);
        assert.equal(created.json.realtimeApiKeySet, false);
      } finally {
        await s.close();
      }
    });
  });
}
