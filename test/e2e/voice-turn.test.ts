/**
 * A full voice turn end to end: flite speech → Opus at real-time pace over a real WebSocket →
 * Silero VAD → pocketsphinx → fake OpenAI-compatible LLM (real SSE) → espeak-ng → Opus → paced
 * frames back, in auto and manual mode and from typed text, then the next turn.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DeviceSim } from '../fixtures/device-sim.ts';
import { startFakeOpenAi, fakeText, type FakeOpenAi } from '../fixtures/fake-openai.ts';
import { childProcesses, decodeDownlink, sendPaced, speak16k, utterancePackets } from '../helpers/speech.ts';
import { startVoiceApp, type VoiceApp } from '../helpers/voice-app.ts';
import { closeAll } from '../helpers/close-all.ts';
import { sleep, waitFor } from '../helpers/wait.ts';

describe('voice turn end to end', () => {
  let llm: FakeOpenAi;
  let srv: VoiceApp;
  let helpersAtStart: string[] = [];
  let packets: Buffer[];
  before(async () => {
    llm = await startFakeOpenAi();
    srv = await startVoiceApp(llm.url);
    helpersAtStart = childProcesses(/espeak-pcm/);
    assert.ok(helpersAtStart.length >= 1, 'each media worker has its espeak-ng helper');
    packets = await utterancePackets(speak16k('what is the weather today'));
  });
  after(async () => {
    await closeAll(srv, llm);
  });

  test('auto mode: stt, tts start, sentences with decodable speech, tts stop; then the next turn', async () => {
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId: 'e2:00:00:00:00:01' });
    try {
      await dev.hello();
      dev.listen('start', { mode: 'auto' });
      const sending = sendPaced(dev, packets, 60, () => dev.json.some((j) => j.msg.type === 'tts'));
      const stt = await dev.waitJson('stt', undefined, 20_000);
      assert.match(String(stt.text), /weather/i, `recognised: ${String(stt.text)}`);
      await dev.waitJson('tts', 'start', 10_000);
      const sentence = await dev.waitJson('tts', 'sentence_start', 10_000);
      assert.match(String(sentence.text), /You said/);
      await dev.waitJson('tts', 'stop', 20_000);
      await sending;
      // Envelope order: stt → tts start → sentence_start → audio → tts stop, no audio outside it.
      const tl = dev.timeline.map((e) =>
        e.kind === 'audio' ? 'audio' : `${String(e.msg.type)}${e.msg.state ? `:${String(e.msg.state)}` : ''}`,
      );
      const iStart = tl.indexOf('tts:start');
      const iStop = tl.indexOf('tts:stop');
      assert.ok(tl.indexOf('stt') < iStart);
      assert.ok(tl.indexOf('tts:sentence_start') > iStart);
      assert.ok(tl.indexOf('audio') > tl.indexOf('tts:sentence_start'));
      assert.equal(tl.lastIndexOf('audio') < iStop, true, 'no audio after tts stop');
      const decoded = await decodeDownlink(dev.audio.map((a) => a.payload));
      assert.equal(decoded.bad, 0);
      assert.ok(decoded.ms > 600, `answer audio ${decoded.ms} ms`);
      assert.ok(decoded.rms > 300, `answer has energy (rms ${decoded.rms})`);
      // Paced, not dumped: the frames span roughly their own duration.
      const span = (dev.audio.at(-1)?.at ?? 0) - (dev.audio[0]?.at ?? 0);
      assert.ok(span > decoded.ms * 0.6, `frames spread over ${span} ms for ${decoded.ms} ms of audio`);
      // tts stop only after the device could have played it all.
      const stopAt = dev.json.find((j) => j.msg.type === 'tts' && j.msg.state === 'stop')?.at ?? 0;
      assert.ok(stopAt - (dev.audio[0]?.at ?? 0) >= decoded.ms - 400, 'tts stop not before playback could end');
      // The model saw the recognised text.
      const lastReq = llm.requests.at(-1);
      assert.ok(lastReq?.body.messages.some((m) => m.role === 'user' && /weather/i.test(String(m.content))));
      // Timings are logged.
      const t = srv.logs.find('turn timings').at(-1);
      assert.ok(t && typeof t.firstAudioMs === 'number' && typeof t.asrMs === 'number');
      // By stage: the first sentence is cut after the transcript and before the first frame leaves.
      assert.ok(
        typeof t.firstSentenceMs === 'number' && t.firstSentenceMs >= t.asrMs && t.firstSentenceMs <= t.firstAudioMs,
        JSON.stringify(t),
      );

      // The next turn on the same connection.
      const before = dev.json.length;
      const audioBefore = dev.audio.length;
      dev.listen('start', { mode: 'auto' });
      await sendPaced(dev, packets, 60, () => dev.json.slice(before).some((j) => j.msg.type === 'tts'));
      await dev.waitJson('tts', 'stop', 20_000, before);
      assert.ok(dev.audio.length > audioBefore);
      assert.equal(llm.requests.length >= 2, true);
      // A device that follows the protocol leaves no warning or error in the log.
      const bad = srv.logs.lines.filter((l) => Number(l.level) >= 40).map((l) => String(l.msg));
      assert.deepEqual(bad, []);
    } finally {
      dev.close();
    }
  });

  test('manual mode: listen stop ends the utterance', async () => {
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId: 'e2:00:00:00:00:02' });
    try {
      await dev.hello();
      dev.listen('start', { mode: 'manual' });
      await sendPaced(dev, packets.slice(0, packets.length - 15));
      dev.listen('stop');
      const stt = await dev.waitJson('stt', undefined, 20_000);
      assert.match(String(stt.text), /weather/i);
      await dev.waitJson('tts', 'stop', 20_000);
    } finally {
      dev.close();
    }
  });

  test('manual mode: a press while the last answer is still being prepared is heard, and that answer is dropped', async () => {
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId: 'e2:00:00:00:00:07' });
    try {
      await dev.hello();
      // The first answer takes 4 s to start: the user presses again before it does.
      llm.script(fakeText('The first answer.', { firstDelayMs: 4000 }), fakeText('The second answer.'));
      const requestsBefore = llm.requests.length;
      dev.listen('start', { mode: 'manual' });
      await sendPaced(dev, packets.slice(0, packets.length - 15));
      dev.listen('stop');
      await dev.waitJson('stt', undefined, 20_000);
      // The first answer is being prepared once the model has its request (and not before: a
      // request aborted before it leaves the server never takes the first scripted reply).
      await llm.waitForRequests(requestsBefore + 1);
      const from = dev.json.length;
      dev.listen('start', { mode: 'manual' });
      await sendPaced(dev, packets.slice(0, packets.length - 15));
      dev.listen('stop');
      const stt = await dev.waitFor(
        'the second utterance recognised',
        () => dev.json.slice(from).find((j) => j.msg.type === 'stt')?.msg,
        20_000,
      );
      assert.match(String(stt.text), /weather/i);
      const s = await dev.waitJson('tts', 'sentence_start', 20_000, from);
      assert.equal(s.text, 'The second answer.');
      await dev.waitJson('tts', 'stop', 20_000, from);
      const said = dev.json
        .filter((j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start')
        .map((j) => String(j.msg.text));
      assert.deepEqual(said, ['The second answer.'], 'the superseded answer was never spoken');
    } finally {
      llm.reset();
      dev.close();
    }
  });

  test('typed text through listen detect is answered; a bare wake word gets the greeting', async () => {
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId: 'e2:00:00:00:00:03' });
    try {
      await dev.hello();
      llm.script(fakeText('Paris is the capital of France.'));
      dev.listen('detect', { text: 'What is the capital of France?' });
      const stt = await dev.waitJson('stt');
      assert.equal(stt.text, 'What is the capital of France?');
      const s = await dev.waitJson('tts', 'sentence_start');
      assert.equal(s.text, 'Paris is the capital of France.');
      await dev.waitJson('tts', 'stop');
      const before = dev.json.length;
      const reqs = llm.requests.length;
      dev.listen('detect', { text: '你好小智' });
      const g = await dev.waitJson('tts', 'sentence_start', 10_000, before);
      assert.equal(g.text, srv.config.conversation.greeting);
      await dev.waitJson('tts', 'stop', 10_000, before);
      assert.equal(llm.requests.length, reqs, 'the greeting needs no model call');
    } finally {
      dev.close();
    }
  });

  test('firmware wake-word flow: detect then listen start at once; the greeting still plays, then speech is heard', async () => {
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId: 'e2:00:00:00:00:05' });
    try {
      await dev.hello();
      // Idle + wake word: the firmware sends `detect`, goes to listening and sends `listen start`.
      dev.listen('detect', { text: '你好小智' });
      dev.listen('start', { mode: 'auto' });
      const g = await dev.waitJson('tts', 'sentence_start', 10_000);
      assert.equal(g.text, srv.config.conversation.greeting);
      await dev.waitJson('tts', 'stop', 10_000);
      const decoded = await decodeDownlink(dev.audio.map((a) => a.payload));
      assert.ok(decoded.ms > 800, `the whole greeting played (${decoded.ms} ms)`);
      // Back to listening without a new listen start (2.4.x sends one after playback; older firmware may not).
      const from = dev.json.length;
      await sendPaced(dev, packets, 60, () => dev.json.slice(from).some((j) => j.msg.type === 'tts'));
      const stt = await dev.waitFor('stt', () => dev.json.slice(from).find((j) => j.msg.type === 'stt')?.msg, 20_000);
      assert.match(String(stt.text), /weather/i);
      await dev.waitJson('tts', 'stop', 20_000, from);
    } finally {
      dev.close();
    }
  });

  test('a device that announces and sends 24 kHz uplink Opus is still understood', async () => {
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId: 'e2:00:00:00:00:06' });
    try {
      await dev.hello({ mcp: false }, 24000);
      dev.listen('start', { mode: 'auto' });
      const p24 = await utterancePackets(speak16k('what is the weather today'), 400, 1500, 24000);
      await sendPaced(dev, p24, 60, () => dev.json.some((j) => j.msg.type === 'tts'));
      const stt = await dev.waitJson('stt', undefined, 20_000);
      assert.match(String(stt.text), /weather/i);
      await dev.waitJson('tts', 'stop', 20_000);
    } finally {
      dev.close();
    }
  });

  test('noise only: no answer, and no child process is left behind', async () => {
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId: 'e2:00:00:00:00:04' });
    try {
      await dev.hello();
      dev.listen('start', { mode: 'manual' });
      const silence = await utterancePackets(new Int16Array(16000), 100, 100);
      await sendPaced(dev, silence);
      dev.listen('stop');
      // Nothing is to happen: give the server the time an answer would take to begin.
      await sleep(1500);
      assert.equal(
        dev.json.some((j) => j.msg.type === 'stt'),
        false,
      );
      assert.equal(
        dev.json.some((j) => j.msg.type === 'tts'),
        false,
      );
    } finally {
      dev.close();
    }
    // No process per turn: the media workers' espeak-ng helpers (espeak-pcm) live as long as they do.
    await waitFor(() => childProcesses(/ffmpeg|espeak-ng /).length === 0, { what: 'no ffmpeg or espeak-ng process' });
    assert.deepEqual(childProcesses(/espeak-pcm/), helpersAtStart, 'the same espeak-ng helpers as at the start');
  });
});
