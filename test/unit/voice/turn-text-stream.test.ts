/**
 * The turn with a voice that takes text in pieces (`canStreamText`): the model's text goes to it
 * as it is written, the timings mark the first text pushed and the vendor's first audio, and a
 * stream that fails is apologised for once, in the embedded voice, without asking the failed
 * voice again. On a manual clock (test/helpers/manual-clock.ts), so the times are exact.
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
import {
  createFakeTextStreamTts,
  peakEncode,
  type FakeTextStreamTtsOptions,
} from '../../fixtures/fake-text-stream-tts.ts';
import { ManualClock } from '../../helpers/manual-clock.ts';
import { timedChannel } from '../../helpers/timed-channel.ts';

const MODEL_DELAY_MS = 250;
const PAUSE_MS = 200;

const unused = (): never => {
  throw new Error('not used by a typed turn');
};

function rig(fakeOpts: FakeTextStreamTtsOptions) {
  const clock = new ManualClock();
  const config = ConfigSchema.parse({});
  const fake = createFakeTextStreamTts(fakeOpts);
  /** What the voice had been given when the model paused in the middle of its sentence. */
  const atPause: { pushed?: string } = {};
  const llm: LlmClient = {
    model: 'fake',
    async *stream({ signal }): AsyncGenerator<LlmEvent> {
      await sleep(MODEL_DELAY_MS, signal, clock);
      yield { type: 'text_delta', text: 'Hello there ' };
      await sleep(PAUSE_MS, signal, clock);
      atPause.pushed = fake.streams[0]?.pushes.map((p) => p.text).join('');
      yield { type: 'text_delta', text: 'my friend. ' };
      yield { type: 'done', finishReason: 'stop' };
    },
  };
  const espeak: MediaWorkerTts = {
    name: 'espeak',
    synthesis: 'media-worker',
    voice: { voice: 'en-us' },
    close: async () => {},
  };
  const spokenByEspeak: string[] = [];
  const media: SessionMedia = {
    uplinkSampleRate: 16000,
    uplinkFrameSamples: 960,
    uplink: unused,
    resetVad: unused,
    encode: (pcm) => peakEncode(pcm),
    async *speak(text) {
      spokenByEspeak.push(text);
      for (let i = 0; i < 5; i++) yield Buffer.from([0xf8, i]);
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
    tts: fake.tts,
    fallbackTts: espeak,
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
  return { clock, config, fake, atPause, turn, sent, spokenByEspeak };
}

test('a voice that takes text in pieces gets the model text as it is written; first text and first audio are timed', async () => {
  const r = rig({});
  const { timings } = await r.clock.run(r.turn.run(), 'the turn');
  assert.equal(r.atPause.pushed, 'Hello there ', 'the words reached the voice while the model was mid-sentence');
  assert.equal(r.fake.streams.length, 1, 'one stream for the answer');
  assert.equal(timings.outcome, 'answered');
  assert.equal(timings.firstSentenceMs, MODEL_DELAY_MS, 'the first text pushed, at the first delta');
  assert.equal(
    timings.ttsFirstAudioMs,
    MODEL_DELAY_MS + PAUSE_MS,
    "the vendor's first audio, once its sentence was complete",
  );
  assert.equal(timings.firstAudioMs, MODEL_DELAY_MS + PAUSE_MS, 'the first frame left with it');
  assert.ok(r.sent.some((s) => s.what === 'tts sentence_start'));
  assert.equal(r.fake.open(), 0);
});

test('a text stream failing: one apology, in the embedded voice; the failed voice is not asked again', async () => {
  const r = rig({ failAfterSentences: 0 });
  const { timings } = await r.clock.run(r.turn.run(), 'the turn');
  assert.equal(timings.outcome, 'failed');
  assert.deepEqual(r.spokenByEspeak, [r.config.conversation.apologies.tts]);
  assert.equal(r.fake.streams.length, 1, 'no second try with the voice that failed');
  assert.equal(r.sent.filter((s) => s.what === 'tts stop').length, 1);
  assert.equal(r.fake.open(), 0);
});
