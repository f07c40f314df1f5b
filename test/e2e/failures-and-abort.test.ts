/**
 * Failures are spoken, not silent, and barge-in really stops everything: LLM 500, LLM timeout,
 * malformed tool-call arguments, abort during speech, realtime barge-in, the goodbye tool.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DeviceSim } from '../fixtures/device-sim.ts';
import { fakeError, fakeText, fakeToolCalls, startFakeOpenAi, type FakeOpenAi } from '../fixtures/fake-openai.ts';
import { childProcesses, decodeDownlink, sendPaced, speak16k, utterancePackets } from '../helpers/speech.ts';
import { startVoiceApp, type VoiceApp } from '../helpers/voice-app.ts';
import { closeAll } from '../helpers/close-all.ts';
import { sleep } from '../helpers/wait.ts';

function sentences(dev: DeviceSim, from = 0): string[] {
  return dev.json
    .slice(from)
    .filter((j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start')
    .map((j) => String(j.msg.text));
}

describe('failures and barge-in', () => {
  let llm: FakeOpenAi;
  let srv: VoiceApp;
  let helpersAtStart: string[] = [];
  before(async () => {
    llm = await startFakeOpenAi();
    srv = await startVoiceApp(llm.url, { llm: { timeoutMs: 1500 } });
    helpersAtStart = childProcesses(/espeak-pcm/);
    assert.ok(helpersAtStart.length >= 1, 'each media worker has its espeak-ng helper');
  });
  after(async () => {
    await closeAll(srv, llm);
  });

  test('LLM answers 500: a spoken apology and tts stop; the next turn works', async () => {
    const dev = new DeviceSim({ url: srv.wsUrl });
    try {
      await dev.hello();
      llm.script(fakeError(500, 'upstream exploded'));
      dev.listen('detect', { text: 'hello there' });
      await dev.waitJson('tts', 'stop', 15_000);
      assert.deepEqual(sentences(dev), [srv.config.conversation.apologies.llm]);
      const decoded = await decodeDownlink(dev.audio.map((a) => a.payload));
      assert.ok(decoded.ms > 1000 && decoded.rms > 300, 'the apology is audible');
      const from = dev.json.length;
      llm.script(fakeText('All good now.'));
      dev.listen('detect', { text: 'try again' });
      await dev.waitJson('tts', 'stop', 15_000, from);
      assert.deepEqual(sentences(dev, from), ['All good now.']);
    } finally {
      dev.close();
    }
  });

  test('LLM never answers: timeout, apology, session still usable', async () => {
    const dev = new DeviceSim({ url: srv.wsUrl });
    try {
      await dev.hello();
      llm.script({ kind: 'hang' });
      const t0 = Date.now();
      dev.listen('detect', { text: 'are you there' });
      await dev.waitJson('tts', 'stop', 20_000);
      assert.ok(Date.now() - t0 < 15_000);
      assert.deepEqual(sentences(dev), [srv.config.conversation.apologies.llm]);
      const failed = srv.logs.find('turn failed; apologising').at(-1);
      assert.equal(failed?.code, 'timeout');
    } finally {
      dev.close();
    }
  });

  test('malformed tool-call arguments reach the model as an error it explains', async () => {
    const dev = new DeviceSim({ url: srv.wsUrl });
    try {
      await dev.hello();
      llm.script(
        fakeToolCalls([{ name: 'get_current_datetime', arguments: '{"timezone": ' }]),
        fakeText('Sorry, I made a mistake calling the clock.'),
      );
      dev.listen('detect', { text: 'what time is it' });
      await dev.waitJson('tts', 'stop', 15_000);
      const toolMsg = llm.requests.at(-1)?.body.messages.find((m) => m.role === 'tool');
      assert.match(String(toolMsg?.content), /Invalid arguments/);
      assert.deepEqual(sentences(dev), ['Sorry, I made a mistake calling the clock.']);
    } finally {
      dev.close();
    }
  });

  test('abort during speech: no frame after the one in flight, tts stop, no child process left', async () => {
    const dev = new DeviceSim({ url: srv.wsUrl });
    try {
      await dev.hello();
      const long = Array.from(
        { length: 12 },
        (_, i) => `This is sentence number ${i + 1} of a long answer that keeps going.`,
      ).join(' ');
      llm.script(fakeText(long, { chunkSize: 12, delayMs: 30 }));
      dev.listen('detect', { text: 'tell me a long story' });
      await dev.waitFor('speech started', () => dev.audio.length >= 10, 15_000);
      const abortAt = performance.now();
      dev.abort();
      const stop = await dev.waitFor(
        'tts stop',
        () => dev.json.find((j) => j.msg.type === 'tts' && j.msg.state === 'stop'),
        5000,
      );
      await sleep(1000);
      // The server stops the moment it handles the abort (its tts stop marks that moment): nothing
      // follows it. Frames that arrive between our abort and its tts stop were already on the wire
      // (at most the pre-buffer burst of a sentence start).
      assert.equal(dev.audio.filter((a) => a.at > stop.at).length, 0, 'nothing after tts stop');
      const inFlight = dev.audio.filter((a) => a.at > abortAt).length;
      assert.ok(inFlight <= srv.config.audio.preBufferFrames, `${inFlight} frames were in flight`);
      assert.ok(llm.requests.at(-1)?.closedEarly, 'the LLM stream was cancelled');
      // No process per turn: the media workers' espeak-ng helpers (espeak-pcm) live as long as they do.
      assert.deepEqual(childProcesses(/ffmpeg|espeak-ng /), []);
      assert.deepEqual(childProcesses(/espeak-pcm/), helpersAtStart, 'the same espeak-ng helpers as at the start');
      // The session is still usable.
      const from = dev.json.length;
      llm.script(fakeText('Okay.'));
      dev.listen('detect', { text: 'never mind' });
      await dev.waitJson('tts', 'stop', 15_000, from);
      assert.deepEqual(sentences(dev, from), ['Okay.']);
    } finally {
      dev.close();
    }
  });

  test('press to talk while speaking: abort and listen start at once, the new utterance is answered', async () => {
    const dev = new DeviceSim({ url: srv.wsUrl });
    try {
      await dev.hello();
      const long = Array.from({ length: 8 }, (_, i) => `Part ${i + 1} of a long answer.`).join(' ');
      llm.script(fakeText(long));
      dev.listen('detect', { text: 'tell me a story' });
      await dev.waitFor('speaking', () => dev.audio.length >= 5, 15_000);
      // The firmware's StartListening from speaking: abort, then listen start (manual).
      const from = dev.json.length;
      dev.abort();
      dev.listen('start', { mode: 'manual' });
      await dev.waitJson('tts', 'stop', 5000, from);
      const packets = await utterancePackets(speak16k('what is the weather today'), 200, 300);
      await sendPaced(dev, packets);
      dev.listen('stop');
      const stt = await dev.waitFor('stt', () => dev.json.slice(from).find((j) => j.msg.type === 'stt')?.msg, 20_000);
      assert.match(String(stt.text), /weather/);
      await dev.waitFor(
        'answer',
        () => dev.json.slice(from).filter((j) => j.msg.type === 'tts' && j.msg.state === 'stop').length >= 2,
        20_000,
      );
    } finally {
      dev.close();
    }
  });

  test('a device flooding audio faster than real time: packets dropped, session still served', async () => {
    const dev = new DeviceSim({ url: srv.wsUrl });
    try {
      await dev.hello();
      dev.listen('start', { mode: 'auto' });
      const packets = await utterancePackets(new Int16Array(16000), 0, 0);
      for (let i = 0; i < 3000; i++) dev.sendOpus(packets[i % packets.length] as Buffer);
      await dev.waitFor(
        'flood noticed',
        () => srv.logs.find('uplink faster than real time; dropping packets').length > 0,
        10_000,
      );
      const from = dev.json.length;
      llm.script(fakeText('Still here.'));
      dev.listen('detect', { text: 'are you still there' });
      await dev.waitJson('tts', 'stop', 15_000, from);
      assert.deepEqual(sentences(dev, from), ['Still here.']);
    } finally {
      dev.close();
    }
  });

  test('the goodbye tool speaks the farewell, then closes the session normally', async () => {
    const dev = new DeviceSim({ url: srv.wsUrl });
    try {
      await dev.hello();
      llm.script(fakeToolCalls([{ name: 'end_conversation', arguments: { farewell: 'Bye for now!' } }]));
      dev.listen('detect', { text: 'goodbye' });
      const code = await dev.closed;
      assert.equal(code, 1000);
      assert.deepEqual(sentences(dev), ['Bye for now!']);
      const tl = dev.json.map((j) => `${String(j.msg.type)}:${String(j.msg.state ?? '')}`);
      assert.equal(tl.at(-1), 'tts:stop', 'tts stop before the close');
    } finally {
      dev.close();
    }
  });
});

describe('realtime barge-in', () => {
  test('with vad.bargeIn, speech during the answer aborts it and starts a new turn', async () => {
    const llm = await startFakeOpenAi();
    let srv: VoiceApp | undefined;
    let device: DeviceSim | undefined;
    try {
      // Started inside the try: a server that fails to start must not leave the fake LLM running.
      srv = await startVoiceApp(llm.url, { vad: { bargeIn: true } });
      const dev = new DeviceSim({ url: srv.wsUrl });
      device = dev;
      const packets = await utterancePackets(speak16k('what is the weather today'), 200, 1200);
      await dev.hello();
      const long = Array.from({ length: 10 }, (_, i) => `Sentence ${i + 1} of a very long answer.`).join(' ');
      llm.script(fakeText(long));
      dev.listen('start', { mode: 'realtime' });
      dev.listen('detect', { text: 'tell me everything' });
      await dev.waitFor('speaking', () => dev.audio.length >= 5, 15_000);
      const firstStops = (): number => dev.json.filter((j) => j.msg.type === 'tts' && j.msg.state === 'stop').length;
      // The user talks over the answer (realtime devices keep the mic open).
      await sendPaced(dev, packets);
      await dev.waitFor('barge-in stop', () => firstStops() >= 1, 10_000);
      const stt = await dev.waitFor(
        'second stt',
        () => dev.json.filter((j) => j.msg.type === 'stt').at(1)?.msg,
        20_000,
      );
      assert.match(String(stt.text), /weather/);
      assert.ok(srv.logs.find('barge-in: speech during the answer').length >= 1);
      await dev.waitFor('second answer done', () => firstStops() >= 2, 20_000);
    } finally {
      device?.close();
      await closeAll(srv, llm);
    }
  });
});
