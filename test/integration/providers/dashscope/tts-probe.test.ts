/**
 * CosyVoice's start-up check against its stand-in (a real WebSocket server on 127.0.0.1): a good
 * key and voice pass with no text sent, a wrong key, an unknown voice, a voice of another model
 * generation, an unreachable port and a task that never starts are each named, and nothing
 * (socket, timer) is left behind. Also once through the doctor's start-up log line.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { createProviderDoctor } from '../../../../providers/doctor.ts';
import { TTS_PROVIDERS, TtsSchema } from '../../../../providers/registry/registry.ts';
import { ConfigSchema } from '../../../../server/config.ts';
import { createLogger } from '../../../../server/logger.ts';
import { startFakeCosyVoiceTts, type FakeCosyVoice } from '../../../fixtures/fake-cosyvoice-tts.ts';
import { createLogSink } from '../../../helpers/log-sink.ts';
import { waitFor } from '../../../helpers/wait.ts';

/** The probe as the doctor calls it, on the parsed `tts` block. */
function probe(tts: Record<string, unknown>, timeoutMs = 3000) {
  const o = TtsSchema.parse({ provider: 'cosyvoice', ...tts });
  assert.equal(o.provider, 'cosyvoice');
  if (o.provider !== 'cosyvoice') throw new Error('unreachable');
  const check = TTS_PROVIDERS.cosyvoice.probe;
  assert.ok(check, 'cosyvoice has a start-up check');
  return check(o, timeoutMs);
}

/** Timers and sockets this process holds. */
function holdings(): number {
  return process.getActiveResourcesInfo().filter((r) => r === 'Timeout' || r === 'TCPSocketWrap').length;
}

/** A port nothing listens on. */
async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('cosyvoice start-up check (probe)', () => {
  let fake: FakeCosyVoice;
  before(async () => {
    fake = await startFakeCosyVoiceTts({ speech: 'tone' });
  });
  after(async () => {
    await fake.close();
  });
  beforeEach(() => {
    fake.fault = 'none';
  });

  test('good key and voice: null, a task run and finished with no text, no socket left', async () => {
    const before = fake.sessions.length;
    const held = holdings();
    assert.equal(await probe({ url: fake.url, apiKey: fake.apiKey }), null);
    const mine = fake.sessions.slice(before);
    assert.equal(mine.length, 1, 'one task');
    assert.equal(mine[0]?.end, 'finish', 'ended by finish-task');
    assert.deepEqual(mine[0]?.texts, [], 'no text sent');
    assert.equal(mine[0]?.audioBytes, 0, 'nothing synthesised');
    assert.equal((mine[0]?.run.parameters as Record<string, unknown>).voice, 'longxiaochun_v2');
    await waitFor(() => fake.openSockets() === 0, { timeoutMs: 2000, what: 'the stand-in to see the socket closed' });
    await waitFor(() => holdings() <= held, { timeoutMs: 2000, what: 'no timer or socket left by the probe' });
  });

  test('wrong key: key_refused (the handshake 401)', async () => {
    const r = await probe({ url: fake.url, apiKey: 'wrong-key' });
    assert.equal(r?.problem, 'key_refused');
    assert.match(r?.detail ?? '', /401/);
    await waitFor(() => fake.openSockets() === 0, { timeoutMs: 2000, what: 'no socket left' });
  });

  test('handshake 403: key_refused', async () => {
    fake.fault = 'refuse';
    const r = await probe({ url: fake.url, apiKey: fake.apiKey });
    assert.equal(r?.problem, 'key_refused');
    assert.match(r?.detail ?? '', /403/);
  });

  test('unknown voice: voice_missing, naming the vendor text', async () => {
    const r = await probe({ url: fake.url, apiKey: fake.apiKey, voice: 'nobody_v2' });
    assert.equal(r?.problem, 'voice_missing');
    assert.match(r?.detail ?? '', /nobody_v2/);
    await waitFor(() => fake.openSockets() === 0, { timeoutMs: 2000, what: 'no socket left' });
  });

  test("a voice of another model generation (the engine's 418): voice_missing", async () => {
    const r = await probe({ url: fake.url, apiKey: fake.apiKey, model: 'cosyvoice-v2', voice: 'longxiaochun' });
    assert.equal(r?.problem, 'voice_missing');
    assert.match(r?.detail ?? '', /418/);
  });

  test('unknown model: model_missing', async () => {
    const r = await probe({ url: fake.url, apiKey: fake.apiKey, model: 'cosyvoice-v9' });
    assert.equal(r?.problem, 'model_missing');
  });

  test('nothing listening: unreachable', async () => {
    const port = await freePort();
    const r = await probe({ url: `ws://127.0.0.1:${port}/api-ws/v1/inference`, apiKey: 'k' });
    assert.equal(r?.problem, 'unreachable');
  });

  test('a task that never starts: unreachable once timeoutMs has passed, the socket closed', async () => {
    fake.fault = 'no-start';
    const held = holdings();
    const r = await probe({ url: fake.url, apiKey: fake.apiKey }, 300);
    assert.equal(r?.problem, 'unreachable');
    assert.match(r?.detail ?? '', /300 ms/);
    await waitFor(() => fake.openSockets() === 0, { timeoutMs: 2000, what: 'the stand-in to see the socket closed' });
    await waitFor(() => holdings() <= held, { timeoutMs: 2000, what: 'no timer or socket left by the probe' });
  });

  test('through the doctor: a wrong voice gives one error line naming tts.voice', async () => {
    const logs = createLogSink();
    const log = createLogger({ level: 'info', logContent: false, destination: logs.stream });
    const config = ConfigSchema.parse({
      llm: { baseURL: 'http://127.0.0.1:1/v1' },
      tts: { provider: 'cosyvoice', url: fake.url, apiKey: fake.apiKey, voice: 'nobody_v2' },
    });
    const found = await createProviderDoctor({ llm: config.llm, asr: config.asr, tts: config.tts }).reportAtStartup(
      log,
    );
    assert.deepEqual(
      found.filter((p) => p.component === 'tts').map((p) => p.problem),
      ['voice_missing'],
    );
    const lines = logs.lines.filter((l) => l.component === 'tts');
    assert.equal(lines.length, 1, logs.text());
    assert.equal(lines[0]?.level, 50, 'an error line');
    assert.match(String(lines[0]?.msg), /tts\.voice/);
    assert.ok(!logs.text().includes(fake.apiKey), 'the key is not logged');
  });
});
