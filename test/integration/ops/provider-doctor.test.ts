/**
 * The start-up provider check against real HTTP servers: an LLM that refuses the key (401/403),
 * one that lacks the model, one that is fine, and an OpenAI-compatible ASR that is unreachable.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { ConfigSchema } from '../../../server/config.ts';
import { createLogger } from '../../../server/logger.ts';
import { createProviderDoctor } from '../../../providers/doctor.ts';
import { startFakeOpenAi, type FakeOpenAi } from '../../fixtures/fake-openai.ts';
import { createLogSink } from '../../helpers/log-sink.ts';

/** An OpenAI-style endpoint that answers every request with `status` and an OpenAI error body. */
async function refusing(status: number): Promise<{ url: string; server: Server }> {
  const server = createServer((_req, res) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({ error: { message: 'Incorrect API key provided: sk-wrong', type: 'invalid_request_error' } }),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/v1`, server };
}

describe('provider doctor', () => {
  let llm: FakeOpenAi;
  const servers: Server[] = [];
  before(async () => {
    llm = await startFakeOpenAi();
  });
  after(async () => {
    await llm.close();
    for (const s of servers) s.close();
  });

  for (const status of [401, 403]) {
    test(`LLM answering ${status}: key_refused, the log line names llm.apiKey and OPENAI_API_KEY`, async () => {
      const r = await refusing(status);
      servers.push(r.server);
      const logs = createLogSink();
      const log = createLogger({ level: 'info', logContent: false, destination: logs.stream });
      const doctor = createProviderDoctor(ConfigSchema.parse({ llm: { baseURL: r.url, apiKey: 'sk-wrong' } }));
      const found = await doctor.reportAtStartup(log);
      assert.deepEqual(
        found.map((p) => [p.component, p.problem]),
        [['llm', 'key_refused']],
      );
      const line = logs.lines.find((l) => l.problem === 'key_refused');
      assert.match(String(line?.msg), /llm\.apiKey \(env OPENAI_API_KEY\)/);
      assert.ok(!logs.text().includes('sk-wrong'), 'the key is not logged');
    });
  }

  test('credentials inside llm.baseURL (userinfo, api-key query) are not logged', async () => {
    const logs = createLogSink();
    const log = createLogger({ level: 'info', logContent: false, destination: logs.stream });
    const baseURL = 'http://user:s3cret@127.0.0.1:1/v1?api-key=k3y&key=k3y2&token=t0k';
    const doctor = createProviderDoctor(ConfigSchema.parse({ llm: { baseURL } }), { timeoutMs: 2_000 });
    const found = await doctor.reportAtStartup(log);
    assert.deepEqual(
      found.map((p) => [p.component, p.problem]),
      [['llm', 'unreachable']],
    );
    const text = logs.text();
    assert.match(text, /No LLM answers/);
    assert.match(text, /127\.0\.0\.1:1/, 'the host is still named');
    for (const secret of ['s3cret', 'k3y', 't0k'])
      assert.ok(!text.includes(secret), `${secret} is not logged: ${text}`);
  });

  test('LLM without the configured model: model_missing naming llm.model and LLM_MODEL', async () => {
    const doctor = createProviderDoctor(ConfigSchema.parse({ llm: { baseURL: llm.url, model: 'qwen2.5:3b' } }));
    const found = await doctor.problems();
    assert.deepEqual(
      found.map((p) => [p.component, p.problem]),
      [['llm', 'model_missing']],
    );
    assert.match(found[0]?.fix ?? '', /llm\.model \(env LLM_MODEL\)/);
  });

  test('a listed model and no remote ASR/TTS: no problems', async () => {
    const doctor = createProviderDoctor(ConfigSchema.parse({ llm: { baseURL: llm.url, model: 'fake-model' } }));
    assert.deepEqual(await doctor.problems(), []);
  });

  test('unreachable OpenAI-compatible ASR: named with asr.baseURL and the embedded alternative', async () => {
    const doctor = createProviderDoctor(
      ConfigSchema.parse({
        llm: { baseURL: llm.url, model: 'fake-model' },
        asr: { provider: 'openai', baseURL: 'http://127.0.0.1:9/v1' },
      }),
      { timeoutMs: 2000 },
    );
    const found = await doctor.problems();
    assert.deepEqual(
      found.map((p) => [p.component, p.problem]),
      [['asr', 'unreachable']],
    );
    assert.match(found[0]?.fix ?? '', /asr\.baseURL.*pocketsphinx/);
  });
});
