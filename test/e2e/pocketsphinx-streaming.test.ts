/**
 * The embedded recogniser streaming end to end: the real server (Opus, Silero, the end of turn,
 * the fake OpenAI-compatible model, espeak-ng) with pocketsphinx's `stream` engine (the helper
 * built by scripts/setup.sh) and a WebSocket device sending flite speech at real-time pace; the
 * same utterance through the `continuous` engine (pocketsphinx_continuous, no partials) beside it.
 * With partials the end of turn reads what was said, so a complete sentence ends after the short
 * silence; each run's `turn timings` (asrMs: the end of speech to the transcript) are printed as
 * test diagnostics, not asserted (the machine is shared).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { streamHelperPath } from '../../providers/pocketsphinx/helper.ts';
import { DeviceSim } from '../fixtures/device-sim.ts';
import { fakeText, startFakeOpenAi, type FakeOpenAi } from '../fixtures/fake-openai.ts';
import { closeAll } from '../helpers/close-all.ts';
import { createLogSink } from '../helpers/log-sink.ts';
import { sendPaced, speak16k, utterancePackets } from '../helpers/speech.ts';
import { startVoiceApp, type VoiceApp } from '../helpers/voice-app.ts';

const SAID = 'what is the weather today';
const built = streamHelperPath() ? false : 'build/pocketsphinx-stream is not built (scripts/setup.sh builds it)';

for (const engine of ['stream', 'continuous'] as const) {
  describe(`pocketsphinx ${engine} engine behind the real server`, { skip: engine === 'stream' && built }, () => {
    let llm: FakeOpenAi;
    let srv: VoiceApp;
    let packets: Buffer[];
    before(async () => {
      llm = await startFakeOpenAi();
      srv = await startVoiceApp(
        llm.url,
        { asr: { provider: 'pocketsphinx', engine }, logging: { level: 'debug', logContent: true } },
        createLogSink(),
      );
      packets = await utterancePackets(speak16k(SAID), 400, 2500);
    });
    after(async () => {
      await closeAll(srv, llm);
    });

    test('a spoken question is recognised and answered', async (t) => {
      const dev = new DeviceSim({
        url: srv.wsUrl,
        deviceId: engine === 'stream' ? 'e8:00:00:00:00:01' : 'e8:00:00:00:00:02',
      });
      try {
        await dev.hello();
        llm.script(fakeText('Sunny.'));
        dev.listen('start', { mode: 'auto' });
        await sendPaced(dev, packets, 60, () => dev.json.some((j) => j.msg.type === 'tts'));
        const stt = await dev.waitJson('stt', undefined, 20_000);
        await dev.waitJson('tts', 'stop', 20_000);
        assert.equal(String(stt.text), SAID);
      } finally {
        dev.close();
      }
      const timings = srv.logs.find('turn timings').at(-1);
      assert.ok(timings, 'the turn logged its timings');
      t.diagnostic(`${engine}: asrMs ${String(timings.asrMs)}, endOfTurnMs ${String(timings.endOfTurnMs)}`);
      const partials = srv.logs.find('pocketsphinx partial').map((l) => (l.pii as { text?: string } | undefined)?.text);
      if (engine === 'continuous') {
        assert.deepEqual(partials, [], 'pocketsphinx_continuous gives no partials');
        return;
      }
      assert.ok(partials.length >= 2, `partials while the user spoke: ${JSON.stringify(partials)}`);
      assert.ok(
        srv.logs.find('partial transcript').length >= 2,
        'the partials reached the end of turn through the session',
      );
      assert.equal(srv.logs.find('streaming recognition final').length, 1, 'the turn took the streamed final');
      const eot = timings.endOfTurnMs;
      assert.ok(
        typeof eot === 'number' && eot < srv.config.vad.minSilenceMs,
        `a complete sentence ended after ${String(eot)} ms of silence`,
      );
    });
  });
}
