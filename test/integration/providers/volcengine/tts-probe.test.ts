/**
 * The start-up check of the Volcengine bidirectional synthesiser (`TTS_PROVIDERS.volcengine.probe`)
 * against its stand-in (a real WebSocket server on 127.0.0.1): a good key and voice pass without
 * any text being sent, a wrong key, an unknown voice, a port nobody listens on and a handshake
 * never answered are each named, and no socket outlives the check. Then once through the doctor,
 * as the server runs it at start-up.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { createProviderDoctor } from '../../../../providers/doctor.ts';
import { TTS_PROVIDERS } from '../../../../providers/registry/registry.ts';
import { VolcengineTtsSchema } from '../../../../providers/volcengine/tts-options.ts';
import { ConfigSchema } from '../../../../server/config.ts';
import { createLogger } from '../../../../server/logger.ts';
import { startFakeOpenAi, type FakeOpenAi } from '../../../fixtures/fake-openai.ts';
import { startFakeVolcengineTts, type FakeVolcengineTts } from '../../../fixtures/fake-volcengine-tts.ts';
import { createLogSink } from '../../../helpers/log-sink.ts';
import { waitFor, within } from '../../../helpers/wait.ts';

const VOICE = 'zh_female_wanwanxiaohe_moon_bigtts';

function probe(o: Record<string, unknown>, timeoutMs = 3_000): ReturnType<NonNullable<typeof volc.probe>> {
  const check = volc.probe;
  assert.ok(check, 'volcengine has a start-up check');
  return within(
    check(VolcengineTtsSchema.parse({ provider: 'volcengine', apiKey: 'test-api-key', ...o }), timeoutMs),
    15_000,
    'the probe to settle',
  );
}
const volc = TTS_PROVIDERS.volcengine;

/** A port on 127.0.0.1 with nothing listening. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

describe('volcengine tts start-up check', () => {
  let fake: FakeVolcengineTts;
  before(async () => {
    fake = await startFakeVolcengineTts({ voices: [VOICE] });
  });
  after(async () => {
    await fake.close();
  });

  const noSocketLeft = (f: FakeVolcengineTts): Promise<boolean> =>
    waitFor(() => f.openSockets() === 0, { what: 'the probe socket to close' });
  /** Timers this process holds (the probe's deadline and drain timers must be gone when it settles). */
  const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

  test('good key and voice: null, a session started with the voice and cancelled, no text, no socket left', async () => {
    fake.fault = 'none';
    const before = fake.sessions.length;
    const timersBefore = timers();
    assert.equal(await probe({ url: fake.url, voice: VOICE }), null);
    assert.equal(timers(), timersBefore, 'no timer left');
    const sessions = fake.sessions.slice(before);
    assert.equal(sessions.length, 1, 'one session was started');
    const s = sessions[0];
    assert.deepEqual(s?.texts, [], 'no text was sent');
    assert.equal(s?.audioBytes, 0, 'nothing was synthesised');
    assert.equal(s?.end, 'cancelled');
    assert.equal(s?.afterStartConnection, true);
    const req = s?.params.req_params as { speaker?: string; audio_params?: { sample_rate?: number } };
    assert.equal(req.speaker, VOICE);
    assert.equal(req.audio_params?.sample_rate, 24_000);
    await noSocketLeft(fake);
  });

  test('wrong key (401 at the upgrade): key_refused', async () => {
    fake.fault = 'none';
    const r = await probe({ url: fake.url, voice: VOICE, apiKey: 'wrong-key' });
    assert.equal(r?.problem, 'key_refused');
    assert.match(r?.detail ?? '', /401/);
    await noSocketLeft(fake);
  });

  test('ConnectionFailed at StartConnection: key_refused', async () => {
    fake.fault = 'connection-failed';
    try {
      const r = await probe({ url: fake.url, voice: VOICE });
      assert.equal(r?.problem, 'key_refused');
    } finally {
      fake.fault = 'none';
    }
    await noSocketLeft(fake);
  });

  test('unknown voice (SessionFailed): voice_missing, nothing spoken', async () => {
    fake.fault = 'none';
    const before = fake.sessions.length;
    const r = await probe({ url: fake.url, voice: 'zh_nobody_bigtts' });
    assert.equal(r?.problem, 'voice_missing');
    assert.match(r?.detail ?? '', /zh_nobody_bigtts/);
    assert.deepEqual(
      fake.sessions.slice(before).map((s) => [s.end, s.texts.length]),
      [['failed', 0]],
    );
    await noSocketLeft(fake);
  });

  test('a port nobody listens on: unreachable', async () => {
    const port = await closedPort();
    const r = await probe({ url: `ws://127.0.0.1:${port}/api/v3/tts/bidirection`, voice: VOICE });
    assert.equal(r?.problem, 'unreachable');
  });

  test('a handshake never answered: unreachable once timeoutMs has passed, the socket dropped', async () => {
    fake.fault = 'stall-handshake';
    try {
      const timersBefore = timers();
      const r = await probe({ url: fake.url, voice: VOICE }, 300);
      assert.equal(timers(), timersBefore, 'no timer left');
      assert.equal(r?.problem, 'unreachable');
      assert.match(r?.detail ?? '', /300 ms/);
    } finally {
      fake.fault = 'none';
    }
    await noSocketLeft(fake);
  });

  test('through the doctor: an unknown voice logs one error line naming tts.voice', async () => {
    let llm: FakeOpenAi | undefined;
    try {
      llm = await startFakeOpenAi();
      const logs = createLogSink();
      const log = createLogger({ level: 'info', logContent: false, destination: logs.stream });
      const config = ConfigSchema.parse({
        llm: { baseURL: llm.url, model: 'fake-model' },
        tts: { provider: 'volcengine', url: fake.url, apiKey: 'test-api-key', voice: 'zh_nobody_bigtts' },
      });
      const found = await createProviderDoctor(config).reportAtStartup(log);
      assert.deepEqual(
        found.map((p) => [p.component, p.problem]),
        [['tts', 'voice_missing']],
      );
      const errors = logs.lines.filter((l) => l.level === 50);
      assert.equal(errors.length, 1, logs.text());
      assert.match(String(errors[0]?.msg), /tts\.voice/);
      assert.ok(!logs.text().includes('test-api-key'), 'the key is not logged');
      await noSocketLeft(fake);
    } finally {
      await llm?.close();
    }
  });

  test('the doctor trusts the check for minutes: /readyz asked again and again opens one vendor session, not one each time', async () => {
    let llm: FakeOpenAi | undefined;
    try {
      llm = await startFakeOpenAi();
      const config = ConfigSchema.parse({
        llm: { baseURL: llm.url, model: 'fake-model' },
        tts: { provider: 'volcengine', url: fake.url, apiKey: 'test-api-key' },
      });
      // No cache of the doctor's own: every call runs the checks again.
      const doctor = createProviderDoctor(config, { cacheMs: 0 });
      const before = fake.sessions.length;
      for (let i = 0; i < 3; i++) assert.deepEqual(await doctor.problems(), []);
      assert.equal(fake.sessions.length - before, 1, 'one session for three checks');
      await noSocketLeft(fake);
    } finally {
      await llm?.close();
    }
  });

  test('a problem the check found is not kept for minutes: once the vendor takes the key again, the next check says so', async () => {
    let llm: FakeOpenAi | undefined;
    try {
      llm = await startFakeOpenAi();
      const config = ConfigSchema.parse({
        llm: { baseURL: llm.url, model: 'fake-model' },
        tts: { provider: 'volcengine', url: fake.url, apiKey: 'test-api-key' },
      });
      const doctor = createProviderDoctor(config, { cacheMs: 0, probeProblemCacheMs: 0 });
      fake.fault = 'refuse';
      assert.deepEqual(
        (await doctor.problems()).map((p) => p.problem),
        ['key_refused'],
      );
      fake.fault = 'none';
      assert.deepEqual(await doctor.problems(), [], 'the vendor is fine again');
      await noSocketLeft(fake);
    } finally {
      fake.fault = 'none';
      await llm?.close();
    }
  });
});
