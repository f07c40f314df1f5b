/**
 * A realtime (speech-to-speech) agent through the real server (media worker, Opus, the pacer, the
 * end of turn, the dispatcher) to a real WebSocket device, with an in-process scripted model
 * (test/fixtures/scripted-realtime-model.ts) as the agent's `realtime` (the device's profile is
 * given it here, as the agents room will from an agent's `pipeline: realtime`):
 * - a spoken question: the model hears the utterance and is committed at our end of turn; its
 *   audio plays with captions from its transcript, between tts start and tts stop;
 * - a typed `listen detect` goes to the model as text;
 * - a function call's text result goes back, the model answers on; bad JSON is an error output;
 *   too many calls in one response cancel it and apologise;
 * - barge-in by `abort` and by speech in realtime mode: cancel with the ms played, no more frames;
 * - `say` is spoken verbatim in the cascade voice and told to the model;
 * - a connection that drops mid-answer: one apology; the next turn has a new connection whose
 *   instructions hold the turns so far; a model that never answers, or errs mid-answer: an apology.
 * - `vad.realtimeTranscript`: a streaming recogniser's complete partial ends the turn after
 *   `completeSilenceMs`, not `minSilenceMs`; off, the turn waits `minSilenceMs`.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AsrStreamOptions, StreamingAsr } from '../../../audio/asr/asr.ts';
import { DeviceSim } from '../../fixtures/device-sim.ts';
import { startFakeOpenAi, type FakeOpenAi } from '../../fixtures/fake-openai.ts';
import { ScriptedRealtimeModel } from '../../fixtures/scripted-realtime-model.ts';
import { closeAll } from '../../helpers/close-all.ts';
import { decodeDownlink, sendPaced, speak16k, utterancePackets } from '../../helpers/speech.ts';
import { startVoiceApp, type VoiceApp } from '../../helpers/voice-app.ts';
import { sleep } from '../../helpers/wait.ts';

const SYSTEM_PROMPT = 'You are Tesla, a helpful voice assistant for testing.';

/** Every device's profile gets `model` as its realtime model (what an agent with `pipeline: realtime` has). */
function useRealtime(srv: VoiceApp, model: ScriptedRealtimeModel, asr?: StreamingAsr): void {
  const profiles = srv.deps.profiles;
  const base = profiles.profileFor.bind(profiles);
  profiles.profileFor = (deviceId) => {
    const held = base(deviceId);
    return { profile: { ...held.profile, realtime: model, ...(asr ? { asr } : {}) }, release: () => held.release() };
  };
}

/**
 * A streaming recogniser that says `partial` once it has heard 500 ms of voice, and records each
 * stream's end (finished or cancelled), so a test sees it released.
 */
function partialAsr(partial: string): {
  asr: StreamingAsr;
  streams: Array<{ finished: boolean; aborted: () => boolean }>;
} {
  const streams: Array<{ finished: boolean; aborted: () => boolean }> = [];
  const asr: StreamingAsr = {
    name: 'partial-asr',
    transcribe: () => Promise.resolve(partial),
    close: () => Promise.resolve(),
    openStream(opts: AsrStreamOptions) {
      const rec = { finished: false, aborted: () => opts.signal.aborted };
      streams.push(rec);
      let voicedSamples = 0;
      let said = false;
      return {
        push(pcm) {
          for (const s of pcm) if (Math.abs(s) > 1000) voicedSamples++;
          if (!said && voicedSamples > opts.sampleRate / 2 / 4) {
            said = true;
            opts.onPartial(partial);
          }
        },
        finish() {
          rec.finished = true;
          return Promise.resolve(partial);
        },
      };
    },
  };
  return { asr, streams };
}

function captions(dev: DeviceSim, from = 0): string[] {
  return dev.json
    .slice(from)
    .filter((j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start')
    .map((j) => String(j.msg.text));
}

function tl(dev: DeviceSim): string[] {
  return dev.timeline.map((e) =>
    e.kind === 'audio' ? 'audio' : `${String(e.msg.type)}${e.msg.state ? `:${String(e.msg.state)}` : ''}`,
  );
}

describe('a realtime agent end to end', { timeout: 240_000 }, () => {
  let llm: FakeOpenAi;
  let srv: VoiceApp;
  let packets: Buffer[];
  let devices = 0;
  const device = async (): Promise<DeviceSim> => {
    devices++;
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId: `e4:00:00:00:00:${String(devices).padStart(2, '0')}` });
    await dev.hello();
    return dev;
  };

  before(async () => {
    llm = await startFakeOpenAi();
    // Barge-in by speech is on (it acts only in realtime listen mode).
    srv = await startVoiceApp(llm.url, { llm: { systemPrompt: SYSTEM_PROMPT }, vad: { bargeIn: true } });
    packets = await utterancePackets(speak16k('what is the weather today'));
  });
  after(async () => {
    await closeAll(srv, llm);
  });

  test('a spoken question: heard by the model, committed at our end of turn, answered with audio and captions', async () => {
    const model = new ScriptedRealtimeModel();
    useRealtime(srv, model);
    model.script({ say: 'It is sunny and warm today. Enjoy the weather.' });
    const dev = await device();
    try {
      dev.listen('start', { mode: 'auto' });
      const sending = sendPaced(dev, packets, 60, () => dev.json.some((j) => j.msg.type === 'tts'));
      await dev.waitJson('tts', 'stop', 30_000);
      await sending;
      const rec = model.last();
      assert.equal(rec.commits, 1);
      // About 2.4 s of speech and silence heard at 24 kHz (the listener's 16 kHz resampled).
      assert.ok(rec.appendedSamples > 24_000, `the model heard ${rec.appendedSamples} samples`);
      assert.match(rec.instructions, /You are Tesla/);
      assert.ok(
        rec.tools.some((t) => t.name === 'get_current_datetime'),
        'the session tools are offered as functions',
      );
      const stt = dev.json.find((j) => j.msg.type === 'stt');
      assert.equal(stt?.msg.text, 'what is the weather');
      assert.deepEqual(captions(dev), ['It is sunny and warm today.', 'Enjoy the weather.']);
      const order = tl(dev);
      assert.ok(order.indexOf('tts:start') < order.indexOf('audio'));
      assert.ok(order.indexOf('tts:sentence_start') < order.indexOf('audio'), 'the first caption before its audio');
      // The second caption goes with the frames of its sentence: after most of the first one's.
      const second = order.lastIndexOf('tts:sentence_start');
      const frames = order.slice(0, second).filter((e) => e === 'audio').length;
      assert.ok(frames > dev.audio.length / 3, `the second caption after ${frames} of ${dev.audio.length} frames`);
      assert.ok(order.lastIndexOf('audio') < order.indexOf('tts:stop'), 'no audio after tts stop');
      const decoded = await decodeDownlink(dev.audio.map((a) => a.payload));
      assert.equal(decoded.bad, 0);
      assert.ok(decoded.ms > 1500, `answer audio ${decoded.ms} ms`);
      assert.ok(decoded.rms > 300, `answer has energy (rms ${decoded.rms})`);
      const timings = srv.logs.find('turn timings').find((l) => l.source === 'voice');
      assert.equal(typeof timings?.firstAudioMs, 'number', 'the first frame is timed from the end of turn');
    } finally {
      dev.close();
    }
  });

  test("the user's transcript arriving after the turn ended is not shown (no late stt)", async () => {
    const model = new ScriptedRealtimeModel();
    useRealtime(srv, model);
    // Past the 3 s the turn waits for it after the answer.
    model.transcriptDelayMs = 6_000;
    model.script({ say: 'Hi.' });
    const dev = await device();
    try {
      dev.listen('start', { mode: 'manual' });
      await sendPaced(dev, packets, 60);
      dev.listen('stop');
      await dev.waitJson('tts', 'stop', 30_000);
      const committedAt = Date.now();
      await dev.waitFor('the commit', () => model.last().commits === 1, 1_000);
      await sleep(Math.max(0, 7_000 - (Date.now() - committedAt)));
      assert.equal(dev.json.filter((j) => j.msg.type === 'stt').length, 0);
    } finally {
      dev.close();
    }
  });

  test('a typed listen detect goes to the model as text', async () => {
    const model = new ScriptedRealtimeModel();
    useRealtime(srv, model);
    model.script({ say: 'Hello to you too.' });
    const dev = await device();
    try {
      dev.listen('detect', { text: 'tell me a joke' });
      await dev.waitJson('tts', 'stop', 20_000);
      assert.deepEqual(model.last().texts, ['tell me a joke']);
      assert.deepEqual(captions(dev), ['Hello to you too.']);
      assert.equal(dev.json.find((j) => j.msg.type === 'stt')?.msg.text, 'tell me a joke');
      // The tools it opened with are not offered again: they did not change.
      assert.deepEqual(model.last().updates, []);
    } finally {
      dev.close();
    }
  });

  test("a function call's text result goes back to the model, which answers on", async () => {
    const model = new ScriptedRealtimeModel();
    useRealtime(srv, model);
    model.script(
      { say: 'Let me check.', calls: [{ name: 'get_current_datetime', arguments: '{}' }] },
      { say: 'It is late.' },
    );
    const dev = await device();
    try {
      dev.listen('detect', { text: 'what time is it' });
      await dev.waitJson('tts', 'stop', 20_000);
      const out = model.last().outputs;
      assert.equal(out.length, 1);
      assert.equal(out[0]?.respond, true);
      assert.match(out[0]?.output ?? '', /\d{4}/, `the tool's text went back: ${out[0]?.output}`);
      assert.deepEqual(captions(dev), ['Let me check.', 'It is late.']);
      assert.equal(dev.json.filter((j) => j.msg.type === 'tts' && j.msg.state === 'stop').length, 1);
    } finally {
      dev.close();
    }
  });

  test('bad function JSON: an error output the model reads, and the answer goes on', async () => {
    const model = new ScriptedRealtimeModel();
    useRealtime(srv, model);
    model.script({ calls: [{ name: 'get_current_datetime', arguments: '{"zone": ' }] }, { say: 'Sorry, once more.' });
    const dev = await device();
    try {
      dev.listen('detect', { text: 'what time is it' });
      await dev.waitJson('tts', 'stop', 20_000);
      const out = model.last().outputs;
      assert.match(out[0]?.output ?? '', /^Error: Invalid arguments for tool "get_current_datetime"/);
      assert.equal(out[0]?.respond, true);
      assert.deepEqual(captions(dev), ['Sorry, once more.']);
    } finally {
      dev.close();
    }
  });

  test('too many function calls in one response: cancelled, none called, an apology', async () => {
    const model = new ScriptedRealtimeModel();
    useRealtime(srv, model);
    model.script({ calls: Array.from({ length: 9 }, () => ({ name: 'get_current_datetime', arguments: '{}' })) });
    const dev = await device();
    try {
      dev.listen('detect', { text: 'what time is it' });
      await dev.waitJson('tts', 'stop', 20_000);
      assert.deepEqual(model.last().outputs, []);
      assert.equal(model.last().cancels.length, 1);
      assert.deepEqual(captions(dev), [srv.config.conversation.apologies.llm]);
      assert.ok(srv.logs.find('realtime response asked for too many function calls; cancelled').length > 0);
    } finally {
      dev.close();
    }
  });

  test('barge-in by abort: the response is cancelled with the ms played, and no frame follows', async () => {
    const model = new ScriptedRealtimeModel();
    useRealtime(srv, model);
    // Sent at real time, so the answer is still coming when the device interrupts.
    model.chunkIntervalMs = 100;
    model.script({ say: 'This is a long answer that goes on and on about many things for a good while.' });
    const dev = await device();
    try {
      dev.listen('detect', { text: 'talk to me' });
      await dev.waitFor('800 ms of answer', () => dev.audio.length >= 14, 20_000);
      dev.abort('wake_word_detected');
      await dev.waitJson('tts', 'stop', 5_000);
      const heard = dev.audio.length;
      await sleep(400);
      assert.ok(dev.audio.length - heard <= 1, `${dev.audio.length - heard} frames after the stop`);
      const cancels = model.last().cancels;
      assert.equal(cancels.length, 1);
      const played = cancels[0] as number;
      assert.ok(played > 300 && played <= heard * 60, `cancelled at ${played} ms with ${heard} frames sent`);
    } finally {
      dev.close();
    }
  });

  test('barge-in by speech in realtime mode: cancelled, and the speech is the next utterance', async () => {
    const model = new ScriptedRealtimeModel();
    useRealtime(srv, model);
    model.chunkIntervalMs = 100;
    model.script(
      { say: 'This is a long answer that goes on and on about many things for a good while.' },
      { say: 'You interrupted me.' },
    );
    const dev = await device();
    try {
      dev.listen('start', { mode: 'realtime' });
      dev.listen('detect', { text: 'talk to me' });
      await dev.waitFor('answer audio', () => dev.audio.length >= 10, 20_000);
      await sendPaced(dev, packets, 60, () => captions(dev).includes('You interrupted me.'));
      await dev.waitFor('the second answer', () => captions(dev).includes('You interrupted me.'), 30_000);
      const rec = model.last();
      assert.equal(rec.cancels.length >= 1, true, 'the first response was cancelled');
      assert.ok((rec.cancels[0] as number) > 0, 'with the ms played');
      assert.equal(rec.commits, 1, 'the speech over the answer was committed as the next turn');
    } finally {
      dev.close();
    }
  });

  test('say on a realtime agent: verbatim in the cascade voice, told to the model as its words', async () => {
    const model = new ScriptedRealtimeModel();
    useRealtime(srv, model);
    model.script({ say: 'Hi.' });
    const deviceId = 'e4:00:00:00:01:00';
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId });
    await dev.hello();
    try {
      dev.listen('detect', { text: 'hello' });
      await dev.waitJson('tts', 'stop', 20_000);
      const from = dev.json.length;
      const text = 'Your tea is ready.';
      const r = await srv.push.say({ deviceId: deviceId, text, source: 'admin' });
      assert.equal(r.status, 'spoken');
      await dev.waitJson('tts', 'stop', 20_000, from);
      assert.deepEqual(captions(dev, from), [text]);
      assert.deepEqual(model.last().assistantTexts, [text]);
      assert.equal(model.connections.length, 1);
    } finally {
      dev.close();
    }
  });

  test('the connection drops mid-answer: one apology; the next turn reconnects with the turns so far', async () => {
    const model = new ScriptedRealtimeModel();
    useRealtime(srv, model);
    model.script({ say: 'First answer here.' }, { say: 'Part of an answer that', fault: 'close', afterChunks: 3 });
    const dev = await device();
    try {
      dev.listen('detect', { text: 'first question' });
      await dev.waitJson('tts', 'stop', 20_000);
      let from = dev.json.length;
      dev.listen('detect', { text: 'second question' });
      await dev.waitJson('tts', 'stop', 20_000, from);
      assert.deepEqual(
        captions(dev, from).filter((c) => c === srv.config.conversation.apologies.llm),
        [srv.config.conversation.apologies.llm],
      );
      model.script({ say: 'Back again.' });
      from = dev.json.length;
      dev.listen('detect', { text: 'third question' });
      await dev.waitJson('tts', 'stop', 20_000, from);
      assert.equal(model.connections.length, 2);
      assert.deepEqual(captions(dev, from), ['Back again.']);
      const instructions = model.last().instructions;
      assert.match(instructions, /User: first question\nAssistant: First answer here\./);
    } finally {
      dev.close();
    }
  });

  test('a model that never answers is cut off by its response timeout, with an apology', async () => {
    const model = new ScriptedRealtimeModel({ responseTimeoutMs: 500 });
    useRealtime(srv, model);
    model.script({ fault: 'silent' });
    const dev = await device();
    try {
      dev.listen('detect', { text: 'anyone there' });
      await dev.waitJson('tts', 'stop', 20_000);
      assert.deepEqual(captions(dev), [srv.config.conversation.apologies.llm]);
      assert.equal(model.last().cancels.length, 1);
    } finally {
      dev.close();
    }
  });

  test('a model whose transcript never ends is cut at the bound and cancelled; the turn ends', async () => {
    const model = new ScriptedRealtimeModel({ responseTimeoutMs: 2_000 });
    useRealtime(srv, model);
    model.script({ fault: 'chatter' });
    const dev = await device();
    try {
      dev.listen('detect', { text: 'say something' });
      await dev.waitFor('the response cancelled', () => model.connections.at(-1)?.cancels.length === 1, 20_000);
      // The session is free again: the next question is answered.
      model.script({ say: 'Here I am.' });
      dev.listen('detect', { text: 'are you there' });
      await dev.waitJson('tts', 'stop', 20_000);
      assert.deepEqual(captions(dev), ['Here I am.']);
      assert.equal(model.last().cancels.length, 1);
    } finally {
      dev.close();
    }
  });

  test('an error event mid-answer: what arrived plays, then an apology', async () => {
    const model = new ScriptedRealtimeModel();
    useRealtime(srv, model);
    model.script({ say: 'Some words before the failure happens here.', fault: 'error', afterChunks: 4 });
    const dev = await device();
    try {
      dev.listen('detect', { text: 'hello' });
      await dev.waitJson('tts', 'stop', 20_000);
      assert.ok(dev.audio.length > 6, 'the audio that arrived played');
      assert.equal(captions(dev).at(-1), srv.config.conversation.apologies.llm);
    } finally {
      dev.close();
    }
  });
});

describe("a realtime agent's end of turn with a streaming recogniser (vad.realtimeTranscript)", {
  timeout: 240_000,
}, () => {
  // minSilenceMs far above completeSilenceMs: only the partial's verdict can end the turn early.
  const vad = { minSilenceMs: 1500, unfinishedSilenceMs: 1500, completeSilenceMs: 200 };
  let llm: FakeOpenAi;
  let on: VoiceApp;
  let off: VoiceApp;
  let packets: Buffer[];

  before(async () => {
    llm = await startFakeOpenAi();
    on = await startVoiceApp(llm.url, { vad: { ...vad, realtimeTranscript: true } });
    off = await startVoiceApp(llm.url, { vad });
    packets = await utterancePackets(speak16k('what is the weather today'), 400, 2500);
  });
  after(async () => {
    await closeAll(on, off, llm);
  });

  async function ask(
    srv: VoiceApp,
    deviceId: string,
  ): Promise<{
    endOfTurnMs: unknown;
    stt: unknown;
    model: ScriptedRealtimeModel;
    streams: ReturnType<typeof partialAsr>['streams'];
  }> {
    const model = new ScriptedRealtimeModel();
    const { asr, streams } = partialAsr('what is the weather today?');
    useRealtime(srv, model, asr);
    model.script({ say: 'It is sunny.' });
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId });
    await dev.hello();
    try {
      dev.listen('start', { mode: 'auto' });
      const sending = sendPaced(dev, packets, 60, () => dev.json.some((j) => j.msg.type === 'tts'));
      await dev.waitJson('tts', 'stop', 30_000);
      await sending;
      const timings = srv.logs.find('turn timings').find((l) => l.source === 'voice');
      return {
        endOfTurnMs: timings?.endOfTurnMs,
        stt: dev.json.find((j) => j.msg.type === 'stt')?.msg.text,
        model,
        streams,
      };
    } finally {
      dev.close();
    }
  }

  test("on: the complete partial ends the turn after completeSilenceMs; the model's transcript is the one shown", async () => {
    const { endOfTurnMs, stt, model, streams } = await ask(on, 'e4:00:00:00:01:01');
    assert.equal(typeof endOfTurnMs, 'number', 'endOfTurnMs is reported');
    const eot = endOfTurnMs as number;
    assert.ok(eot < vad.minSilenceMs, `committed after ${eot} ms of silence`);
    assert.ok(eot >= vad.completeSilenceMs, `not before completeSilenceMs (${eot})`);
    assert.equal(model.last().commits, 1);
    assert.equal(stt, model.userTranscript, "the model's transcript, not the recogniser's");
    assert.equal(streams.length, 1, 'one recogniser stream for the utterance');
    assert.ok(
      streams.every((s) => s.aborted() || s.finished),
      'its stream is released with the utterance',
    );
  });

  test('off: the same utterance waits minSilenceMs, and no recogniser stream is opened', async () => {
    const { endOfTurnMs, model, streams } = await ask(off, 'e4:00:00:00:01:02');
    assert.equal(typeof endOfTurnMs, 'number', 'endOfTurnMs is reported');
    assert.ok((endOfTurnMs as number) >= vad.minSilenceMs, `committed after ${String(endOfTurnMs)} ms of silence`);
    assert.equal(model.last().commits, 1);
    assert.equal(streams.length, 0);
  });
});
