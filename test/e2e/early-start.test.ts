/**
 * Early start (`vad.earlyStartMs`): at a pause inside speech the server starts the turn (ASR, the
 * model, synthesis) while the VAD waits for the rest of `minSilenceMs`, over a real WebSocket with
 * real Opus, Silero and the OpenAI-compatible fakes. The device must see nothing before the end of
 * speech is confirmed; a user who speaks on leaves no trace: no message, no tool call, nothing in
 * the history.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { concatInt16 } from '../../audio/pcm/pcm.ts';
import { DeviceSim } from '../fixtures/device-sim.ts';
import { fakeText, fakeToolCalls, startFakeOpenAi, type FakeOpenAi } from '../fixtures/fake-openai.ts';
import { startFakeOpenAiAudio, type FakeOpenAiAudio } from '../fixtures/fake-openai-audio.ts';
import { trimSilence } from '../bench/sim/device.ts';
import { speak16k, utterancePackets } from '../helpers/speech.ts';
import { startVoiceApp, type VoiceApp } from '../helpers/voice-app.ts';
import { closeAll } from '../helpers/close-all.ts';

const FRAME_MS = 60;
const LEAD_MS = 400;
/**
 * The end of speech needs a second of silence here, whatever the transcript says (meaning-based
 * ending off: voice/turn-end is tested on its own); the early start comes after 200 ms (the default).
 */
const MIN_SILENCE_MS = 1000;
/** A pause between the early start and the end of speech. */
const PAUSE_MS = 600;

/** Sends packets at real time; returns when each was sent (performance.now()). */
async function sendAt(dev: DeviceSim, packets: readonly Buffer[], stop: () => boolean): Promise<number[]> {
  const start = performance.now();
  const sent: number[] = [];
  for (let i = 0; i < packets.length && !stop(); i++) {
    const wait = start + i * FRAME_MS - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    if (dev.ws.readyState !== 1) break;
    dev.sendOpus(packets[i] as Buffer);
    sent.push(performance.now());
  }
  return sent;
}

async function earlyStarts(httpUrl: string): Promise<{ used: number; dropped: number }> {
  const text = await (await fetch(`${httpUrl}/metrics`)).text();
  const count = (result: string): number =>
    Number(new RegExp(`^xiaozhi_early_starts_total\\{result="${result}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
  return { used: count('used'), dropped: count('dropped') };
}

describe('early start at a pause', () => {
  let llm: FakeOpenAi;
  let asr: FakeOpenAiAudio;
  let srv: VoiceApp;
  let volumeCalls = 0;
  before(async () => {
    llm = await startFakeOpenAi();
    asr = await startFakeOpenAiAudio({ transcript: 'turn up the volume to eighty' });
    srv = await startVoiceApp(llm.url, {
      asr: { provider: 'openai', baseURL: asr.baseURL, apiKey: 'sk-asr', model: 'whisper-1', language: 'en' },
      vad: { minSilenceMs: MIN_SILENCE_MS, completeSilenceMs: 0 },
    });
    assert.equal(srv.config.vad.earlyStartMs, 200, 'on by default');
  });
  after(async () => {
    await closeAll(srv, asr, llm);
  });

  function device(id: string): DeviceSim {
    return new DeviceSim({
      url: srv.wsUrl,
      deviceId: id,
      mcpTools: [
        {
          name: 'self.audio_speaker.set_volume',
          description: 'Set the speaker volume',
          inputSchema: { type: 'object', properties: { volume: { type: 'integer' } }, required: ['volume'] },
          call: () => {
            volumeCalls++;
            return 'true';
          },
        },
      ],
    });
  }

  test('the answer is prepared during the silence and sent only once the end of speech is confirmed', async () => {
    const dev = device('e5:00:00:00:00:01');
    try {
      await dev.hello({ mcp: true });
      const starts0 = await earlyStarts(srv.httpUrl);
      const llm0 = llm.requests.length;
      const asr0 = asr.transcriptions.length;
      llm.script(fakeText('Here is the answer.'));
      const speech = trimSilence(speak16k('what time is it'));
      const packets = await utterancePackets(speech, LEAD_MS, 2500);
      dev.listen('start', { mode: 'auto' });
      const sent = await sendAt(dev, packets, () => dev.json.some((j) => j.msg.type === 'tts'));
      const stt = await dev.waitJson('stt', undefined, 15_000);
      await dev.waitJson('tts', 'stop', 15_000);
      assert.equal(stt.text, 'turn up the volume to eighty');

      // Nothing before the VAD confirmed the end: stt came at least most of a second of silence
      // after the last speech packet (an early start shown at once would be ~300 ms after it).
      const lastSpeech = sent[Math.ceil((LEAD_MS + speech.length / 16) / FRAME_MS) - 1] as number;
      const sttAt = dev.json.find((j) => j.msg.type === 'stt')?.at ?? 0;
      assert.ok(
        sttAt - lastSpeech >= MIN_SILENCE_MS - 200,
        `stt ${Math.round(sttAt - lastSpeech)} ms after the end of speech`,
      );
      // The envelope as always: stt → tts start → sentence → audio → tts stop.
      const tl = dev.timeline.map((e) =>
        e.kind === 'audio' ? 'audio' : `${String(e.msg.type)}${e.msg.state ? `:${String(e.msg.state)}` : ''}`,
      );
      assert.deepEqual(
        tl.filter((k) => k !== 'audio' && k !== 'mcp'),
        ['hello', 'stt', 'tts:start', 'tts:sentence_start', 'tts:stop'],
      );
      assert.ok(tl.indexOf('audio') > tl.indexOf('tts:sentence_start'));

      // It did start early: one ASR upload and one model request, made during the silence.
      assert.equal(asr.transcriptions.length - asr0, 1);
      assert.equal(llm.requests.length - llm0, 1);
      const t = srv.logs.find('turn timings').at(-1);
      assert.ok(
        t && typeof t.earlyStartMs === 'number' && t.earlyStartMs >= 300,
        `started ${String(t?.earlyStartMs)} ms before the end of speech`,
      );
      assert.equal(t.asrMs, 0, 'the transcript was there before the end of speech');
      assert.ok(
        typeof t.firstSentenceMs === 'number' &&
          typeof t.firstAudioMs === 'number' &&
          t.firstSentenceMs <= t.firstAudioMs,
      );
      const starts = await earlyStarts(srv.httpUrl);
      assert.deepEqual(
        { used: starts.used - starts0.used, dropped: starts.dropped - starts0.dropped },
        { used: 1, dropped: 0 },
      );
    } finally {
      dev.close();
    }
  });

  test('speaking on after a pause drops the early turn: nothing sent, no tool called, nothing in the history', async () => {
    const dev = device('e5:00:00:00:00:02');
    try {
      await dev.hello({ mcp: true });
      await dev.waitFor('device tools listed', () => dev.mcpRequests.some((r) => r.method === 'tools/list'));
      const starts0 = await earlyStarts(srv.httpUrl);
      const llm0 = llm.requests.length;
      const asr0 = asr.transcriptions.length;
      // The early turn (at the pause) is answered with a tool call; the real one with text.
      llm.script(
        fakeToolCalls([{ name: 'self_audio_speaker_set_volume', arguments: { volume: 80 } }]),
        fakeText('Which volume?'),
      );
      const first = trimSilence(speak16k('turn up the volume'));
      const second = trimSilence(speak16k('to eighty please'));
      const packets = await utterancePackets(
        concatInt16([first, new Int16Array(16 * PAUSE_MS), second]),
        LEAD_MS,
        2500,
      );
      dev.listen('start', { mode: 'auto' });
      await sendAt(dev, packets, () => dev.json.some((j) => j.msg.type === 'tts'));
      await dev.waitJson('tts', 'stop', 15_000);

      // Two uploads and two model requests: the pause started a turn, the end of speech another.
      assert.equal(asr.transcriptions.length - asr0, 2, 'the pause started a turn');
      assert.equal(llm.requests.length - llm0, 2, 'the early turn reached the model (and its tool call)');
      // The dropped turn's tool call never ran, and the device was told once.
      assert.equal(volumeCalls, 0, 'no tool call before the end of speech');
      assert.equal(dev.mcpRequests.filter((r) => r.method === 'tools/call').length, 0);
      const types = dev.json.map((j) => `${String(j.msg.type)}${j.msg.state ? `:${String(j.msg.state)}` : ''}`);
      assert.equal(types.filter((k) => k === 'stt').length, 1);
      assert.equal(types.filter((k) => k === 'tts:start').length, 1);
      assert.equal(
        dev.json.find((j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start')?.msg.text,
        'Which volume?',
      );
      // The second request saw one user message and no trace of the dropped turn's tool call.
      const msgs = llm.requests.at(-1)?.body.messages ?? [];
      assert.equal(msgs.filter((m) => m.role === 'user').length, 1, JSON.stringify(msgs));
      assert.equal(msgs.filter((m) => m.role === 'assistant' || m.role === 'tool').length, 0, JSON.stringify(msgs));
      const starts = await earlyStarts(srv.httpUrl);
      assert.deepEqual(
        { used: starts.used - starts0.used, dropped: starts.dropped - starts0.dropped },
        { used: 1, dropped: 1 },
      );
      // Only the turn that answered is logged as a turn.
      const bad = srv.logs.lines.filter((l) => Number(l.level) >= 40).map((l) => String(l.msg));
      assert.deepEqual(bad, []);
    } finally {
      dev.close();
    }
  });

  test('a device that keeps pausing and resuming costs at most three dropped early starts per utterance', async () => {
    const dev = device('e5:00:00:00:00:03');
    try {
      await dev.hello();
      const starts0 = await earlyStarts(srv.httpUrl);
      const asr0 = asr.transcriptions.length;
      llm.script(fakeText('Done.'));
      // Five phrases with four pauses between them, each long enough for an early start.
      const words = [
        'turn on the light',
        'in the kitchen',
        'and in the hallway',
        'and in the garden',
        'right now please',
      ].map((w) => trimSilence(speak16k(w)));
      const pause = new Int16Array(16 * PAUSE_MS);
      const speech = concatInt16(words.flatMap((w, i) => (i === 0 ? [w] : [pause, w])));
      dev.listen('start', { mode: 'auto' });
      await sendAt(dev, await utterancePackets(speech, LEAD_MS, 2500), () =>
        dev.json.some((j) => j.msg.type === 'tts'),
      );
      await dev.waitJson('tts', 'stop', 15_000);
      // Three early starts dropped, then none until the end: the answer's turn starts at the end of speech.
      const starts = await earlyStarts(srv.httpUrl);
      assert.deepEqual(
        { used: starts.used - starts0.used, dropped: starts.dropped - starts0.dropped },
        { used: 0, dropped: 3 },
      );
      assert.equal(asr.transcriptions.length - asr0, 4);
      assert.equal(dev.json.filter((j) => j.msg.type === 'stt').length, 1);
    } finally {
      dev.close();
    }
  });
});
