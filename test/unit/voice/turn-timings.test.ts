/**
 * A turn's timings are read on the clock its deps give it: with a manual clock the model's delay,
 * the first frame and the whole turn come out exact, whatever the machine is doing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sleep } from '../../../core/abort.ts';
import { silentLogger } from '../../../core/logger.ts';
import type { SessionMedia } from '../../../audio/media/media.ts';
import type { MediaWorkerTts } from '../../../audio/tts/tts.ts';
import { createHistory } from '../../../llm/history.ts';
import type { LlmClient, LlmEvent } from '../../../llm/types.ts';
import type { ToolSource } from '../../../mcp/contract/tool-source.ts';
import { ConfigSchema } from '../../../server/config.ts';
import type { StateControl } from '../../../voice/session/conversation.ts';
import { Turn } from '../../../voice/conversation/turn.ts';
import type { VoiceDeps } from '../../../voice/conversation/voice-deps.ts';
import { ManualClock } from '../../helpers/manual-clock.ts';
import { timedChannel } from '../../helpers/timed-channel.ts';

const MODEL_DELAY_MS = 250;
const FRAMES = 10;

const unused = (): never => {
  throw new Error('not used by a typed turn');
};

test('a typed turn is timed on the injected clock: first sentence and frame at the model delay, total to the last tts stop', async () => {
  const clock = new ManualClock();
  const config = ConfigSchema.parse({});
  const llm: LlmClient = {
    model: 'fake',
    async *stream({ signal }): AsyncGenerator<LlmEvent> {
      await sleep(MODEL_DELAY_MS, signal, clock);
      yield { type: 'text_delta', text: 'Hello there.' };
      yield { type: 'done', finishReason: 'stop' };
    },
  };
  const tts: MediaWorkerTts = {
    name: 'espeak',
    synthesis: 'media-worker',
    voice: { voice: 'en-us' },
    close: async () => {},
  };
  const media: SessionMedia = {
    uplinkSampleRate: 16000,
    uplinkFrameSamples: 960,
    uplink: unused,
    resetVad: unused,
    encode: unused,
    async *speak() {
      for (let i = 0; i < FRAMES; i++) yield Buffer.from([0xf8, i]);
    },
    holdPlayback: () => {},
    onLost: () => {},
    close: async () => {},
  };
  const deps: VoiceDeps = {
    config,
    log: silentLogger,
    media: { open: unused, stats: unused, close: unused } as unknown as VoiceDeps['media'],
    asr: { transcribe: unused, close: async () => {} } as unknown as VoiceDeps['asr'],
    tts,
    llm,
    toolsFor: unused,
    clock,
  };
  const { channel, sent, t0 } = timedChannel(clock);
  const tools: ToolSource = { listTools: async () => [], callTool: unused };
  const state: StateControl = { current: 'listening', mode: 'auto', apply: () => null };
  const turn = new Turn(
    {
      deps,
      info: {
        sessionId: 's1',
        deviceId: null,
        clientId: null,
        protocolVersion: 1,
        uplink: { sampleRate: 16000, frameDurationMs: 60 },
        downlink: { sampleRate: 24000, frameDurationMs: 60 },
        features: { mcp: false, aec: false },
      },
      channel,
      log: silentLogger,
      media,
      history: createHistory({ systemPrompt: '', historyTurns: 5 }),
      tools: { tools },
      state,
      sessionSignal: new AbortController().signal,
    },
    { source: 'text', text: 'hi', endedAt: t0 },
  );

  const { timings } = await clock.run(turn.run(), 'the turn');
  const end = clock.now() - t0;

  assert.equal(timings.outcome, 'answered');
  assert.equal(timings.firstSentenceMs, MODEL_DELAY_MS, 'the sentence is cut when the model answers');
  assert.equal(timings.firstAudioMs, MODEL_DELAY_MS, 'the first frame leaves at once');
  assert.equal(sent.filter((s) => s.what === 'frame').length, FRAMES);
  const stop = sent.findLast((s) => s.what === 'tts stop');
  assert.ok(stop, 'tts stop was sent');
  // The last thing the turn does is wait for the device's play-out before `tts stop`.
  assert.equal(timings.totalMs, stop.at);
  assert.equal(timings.totalMs, end);
  assert.ok(
    timings.totalMs >= MODEL_DELAY_MS + FRAMES * 60,
    `the ${FRAMES} frames are played out before the turn ends: ${timings.totalMs} ms`,
  );
});
