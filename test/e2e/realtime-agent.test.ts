/**
 * Realtime (speech-to-speech) agents end to end: the real server (Opus, Silero, the end of turn,
 * the media workers, the pacer) whose agent talks through the realtime stand-in
 * (test/fixtures/fake-realtime-model.ts, written from the openai SDK's event types) over TLS with
 * a test CA (the `ca` setting), once over plain ws:, to a WebSocket device and an MQTT+UDP device:
 * - a spoken question (real speech, Opus-encoded) answered with audio frames between tts start/stop;
 * - a local tool call whose result goes back to the model, which then speaks;
 * - barge-in: the device's abort mid-answer stops the frames, the stand-in sees response.cancel;
 * - `say` from the push API on an idle device, spoken while the realtime agent stays;
 * - memory: a fact of the device is in the session's instructions; both sides' transcripts are in
 *   the history the console reads;
 * - the Qwen-Omni dialect once;
 * - an MCP server's tool (stdio) with a text result, and one with AudioContent (played, the model
 *   told `played` without being asked for a response);
 * - `maxFunctionCallsPerResponse` above the conversation's default is the bound;
 * - `say` while an answer plays: after it, or (`interrupt`) at once with the answer cancelled;
 * - bad input from the model (unknown events, undecodable audio, bad function JSON, an error
 *   mid-response, a closed socket): each its defined outcome (the answer, or what arrived and the
 *   apology), the session stays up, the next turn on the same model (the fault off) is answered.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { trimSilence } from '../bench/sim/device.ts';
import { DeviceSim } from '../fixtures/device-sim.ts';
import { startFakeOpenAi, type FakeOpenAi } from '../fixtures/fake-openai.ts';
import {
  startFakeRealtimeModel,
  type FakeModelFault,
  type FakeRealtimeModel,
  type FakeReply,
  type RespondContext,
} from '../fixtures/fake-realtime-model.ts';
import { closeAll } from '../helpers/close-all.ts';
import { MqttUdpClient, type MqttSection } from '../helpers/mqtt-udp-client.ts';
import { sleep, waitFor } from '../helpers/wait.ts';
import { makeTestCa, type TestCa } from '../helpers/test-ca.ts';
import { decodeDownlink, sendPaced, speak16k, utterancePackets } from '../helpers/speech.ts';
import { startVoiceApp, type VoiceApp } from '../helpers/voice-app.ts';

const QUESTION = 'what is the weather like in Berlin';
const KEY = 'sk-realtime-e2e-key';

/** What the stand-in answers, set per test. */
let reply: (ctx: RespondContext) => FakeReply = () => ({ say: 'It is sunny in Berlin.' });

interface Asked {
  from: number;
  stt: Record<string, unknown> | undefined;
  frames: number;
  ms: number;
  rms: number;
}

/** Speaks `packets` (auto listen mode), waits for the answer's tts stop; frames and audio between. */
async function ask(dev: DeviceSim, packets: Buffer[]): Promise<Asked> {
  const from = dev.json.length;
  const audioFrom = dev.audio.length;
  dev.listen('start', { mode: 'auto' });
  await sendPaced(dev, packets, 60, () => dev.json.slice(from).some((j) => j.msg.type === 'tts'));
  await dev.waitJson('tts', 'stop', 30_000, from);
  const stt = dev.json.slice(from).find((j) => j.msg.type === 'stt')?.msg;
  const audio = dev.audio.slice(audioFrom).map((a) => a.payload);
  const decoded = await decodeDownlink(audio);
  return { from, stt, frames: audio.length, ms: decoded.ms, rms: decoded.rms };
}

describe('a realtime agent over TLS with a test CA, on WebSocket', () => {
  let ca: TestCa;
  let fake: FakeRealtimeModel;
  let llm: FakeOpenAi;
  let srv: VoiceApp;
  let question: Buffer[];

  before(async () => {
    ca = makeTestCa();
    fake = await startFakeRealtimeModel({
      tls: { cert: ca.cert, key: ca.key },
      apiKey: KEY,
      transcribe: () => QUESTION,
      respond: (ctx) => reply(ctx),
    });
    llm = await startFakeOpenAi();
    srv = await startVoiceApp(llm.url, {
      pipeline: 'realtime',
      realtime: {
        provider: 'openai-realtime',
        baseURL: fake.url,
        apiKey: KEY,
        ca: ca.caFile,
        model: 'gpt-realtime',
        // Above the conversation's default of 8: the setting is the bound.
        maxFunctionCallsPerResponse: 10,
      },
      logging: { level: 'debug' },
      mcpServers: {
        voice: { command: process.execPath, args: ['--import', 'tsx', 'test/fixtures/mcp-voice-tools-server.ts'] },
      },
    });
    question = await utterancePackets(trimSilence(speak16k(QUESTION)), 400, 2000);
  });
  after(async () => {
    await closeAll(srv, fake, llm);
    ca?.close();
  });

  test('a spoken question is answered with audio from the model, between tts start and stop', async () => {
    reply = () => ({ say: 'It is sunny in Berlin.' });
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId: 'e8:00:00:00:00:01' });
    try {
      await dev.hello();
      const a = await ask(dev, question);
      assert.equal(a.stt?.text, QUESTION, "the model's transcript of the user goes to the device");
      assert.ok(a.frames > 10, `answer frames: ${a.frames}`);
      assert.ok(a.rms > 100, 'the frames hold speech, not silence');
      assert.equal(llm.requests.length, 0, 'the cascade model is not asked');
      const session = fake.sessions.at(-1);
      assert.ok(session, 'the stand-in was dialled');
      assert.ok(session.commits >= 1);
      assert.ok(session.audio.length > 24_000 * 2 * 0.5, 'the user audio reached the model');
    } finally {
      dev.close();
    }
  });
  test('a tool call: the local tool runs, its result goes back to the model, which then speaks', async () => {
    const seen: RespondContext[] = [];
    reply = (ctx) => {
      seen.push(ctx);
      return ctx.functionOutput ? { say: 'It is noon.' } : { call: { name: 'get_current_datetime', arguments: '{}' } };
    };
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId: 'e8:00:00:00:00:02' });
    try {
      await dev.hello();
      const a = await ask(dev, question);
      assert.ok(seen[0]?.toolNames.includes('get_current_datetime'), 'the local tools are offered as functions');
      const out = seen.find((c) => c.functionOutput)?.functionOutput;
      assert.equal(out?.name, 'get_current_datetime');
      assert.match(String(out?.output), /\d{4}/, `the tool's result reached the model: ${out?.output}`);
      assert.ok(a.frames > 5 && a.rms > 100, 'the answer after the tool is heard');
    } finally {
      dev.close();
    }
  });

  test('maxFunctionCallsPerResponse set to 10: a response with 9 calls is called in full and answered', async () => {
    const seen: RespondContext[] = [];
    reply = (ctx) => {
      seen.push(ctx);
      return ctx.functionOutput
        ? { say: 'Nine times noon.' }
        : { calls: Array.from({ length: 9 }, () => ({ name: 'get_current_datetime', arguments: '{}' })) };
    };
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId: 'e8:00:00:00:00:09' });
    try {
      await dev.hello();
      const from = dev.json.length;
      dev.listen('detect', { text: 'What time is it, nine times?' });
      await dev.waitJson('tts', 'stop', 20_000, from);
      assert.deepEqual(captions(dev, from), ['Nine times noon.'], 'answered, no apology');
      const session = fake.sessions.at(-1);
      assert.equal(session?.items.filter((i) => i.type === 'function_call_output').length, 9);
      assert.equal(session?.cancels.length, 0);
    } finally {
      dev.close();
    }
  });

  test('barge-in: an abort mid-answer stops the frames; the model is told response.cancel; the next turn works', async () => {
    reply = (ctx) =>
      ctx.index === 0
        ? {
            say: 'Berlin is a large city with many parks, museums, lakes and rivers, and the weather changes often during the day.',
          }
        : { say: 'Yes.' };
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId: 'e8:00:00:00:00:03' });
    try {
      await dev.hello();
      const from = dev.json.length;
      dev.listen('start', { mode: 'auto' });
      await sendPaced(dev, question, 60, () => dev.json.slice(from).some((j) => j.msg.type === 'tts'));
      await dev.waitJson('tts', 'start', 30_000, from);
      const started = dev.audio.length;
      await dev.waitFor('answer frames', () => dev.audio.length > started + 5, 15_000);
      const session = fake.sessions.at(-1);
      assert.ok(session);
      const cancelsBefore = session.cancels.length;
      dev.abort();
      await dev.waitJson('tts', 'stop', 5000, from);
      await waitFor(() => session.cancels.length > cancelsBefore, { what: 'response.cancel at the stand-in' });
      await sleep(300);
      const settled = dev.audio.length;
      await sleep(1000);
      assert.equal(dev.audio.length, settled, 'no frame after the abort settled');
      const next = await ask(dev, question);
      assert.ok(next.frames > 0, 'the next turn is answered');
    } finally {
      dev.close();
    }
  });

  test('say from the push API on an idle device is spoken; the model is told what was said', async () => {
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId: 'e8:00:00:00:00:04', clientId: 'client-e8-04' });
    try {
      await dev.hello();
      reply = () => ({ say: 'Hello.' });
      await ask(dev, question); // the realtime link is open from here
      const from = dev.json.length;
      const audioFrom = dev.audio.length;
      const outcome = await srv.push.say({ deviceId: 'e8:00:00:00:00:04', text: 'Dinner is ready.', source: 'admin' });
      assert.equal(outcome.status, 'spoken');
      await dev.waitJson('tts', 'stop', 15_000, from);
      assert.ok(dev.audio.length > audioFrom + 5, 'the text is heard');
      const session = fake.sessions.at(-1);
      await waitFor(() => session?.items.some((i) => JSON.stringify(i).includes('Dinner is ready.')), {
        what: "the pushed text recorded in the model's conversation",
      });
    } finally {
      dev.close();
    }
  });

  test('an MCP server tool (stdio) called by the model: its text result goes back to the model, which speaks it', async () => {
    const seen: RespondContext[] = [];
    reply = (ctx) => {
      seen.push(ctx);
      return ctx.functionOutput
        ? { say: ctx.functionOutput.output }
        : { call: { name: 'voice__weather', arguments: '{"city":"Paris"}' } };
    };
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId: 'e8:00:00:00:00:06' });
    try {
      await dev.hello();
      const from = dev.json.length;
      dev.listen('detect', { text: 'How is the weather in Paris?' });
      await dev.waitJson('tts', 'stop', 20_000, from);
      assert.ok(seen[0]?.toolNames.includes('voice__weather'), `offered: ${seen[0]?.toolNames.join(', ')}`);
      assert.equal(seen[0]?.userText, 'How is the weather in Paris?');
      assert.deepEqual(
        seen.map((c) => c.functionOutput && [c.functionOutput.name, c.functionOutput.output]),
        [undefined, ['voice__weather', 'It is 21 degrees and sunny in Paris.']],
        "the MCP server's text went back, and the model was asked to go on",
      );
      assert.deepEqual(captions(dev, from), ['It is 21 degrees and sunny in Paris.']);
    } finally {
      dev.close();
    }
  });

  test("an MCP tool whose result is AudioContent: it plays at the device and ends the answer; the model gets 'played' and no response.create", async () => {
    const seen: RespondContext[] = [];
    reply = (ctx) => {
      seen.push(ctx);
      return { call: { name: 'voice__say_hello_audio', arguments: '{}' } };
    };
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId: 'e8:00:00:00:00:07' });
    try {
      await dev.hello();
      const from = dev.json.length;
      const audioFrom = dev.audio.length;
      dev.listen('detect', { text: 'Play the hello recording' });
      await dev.waitJson('tts', 'stop', 20_000, from);
      assert.deepEqual(ttsStates(dev, from), ['start', 'stop']);
      assert.deepEqual(captions(dev, from), ['♪ audio'], 'shown as the cascade shows tool audio');
      const decoded = await decodeDownlink(dev.audio.slice(audioFrom).map((a) => a.payload));
      assert.equal(decoded.bad, 0);
      assert.ok(decoded.ms > 3000 && decoded.rms > 100, `the ~3.5 s recording played (${decoded.ms} ms)`);
      const session = fake.sessions.at(-1);
      assert.ok(session);
      const output = await waitFor(() => session.items.find((i) => i.type === 'function_call_output'), {
        what: 'the function output at the stand-in',
      });
      assert.equal(output?.output, 'played');
      await sleep(300);
      const at = session.received.lastIndexOf('conversation.item.create');
      assert.deepEqual(session.received.slice(at), ['conversation.item.create'], 'no response.create after it');
      assert.equal(seen.length, 1, 'the model made one response');
    } finally {
      dev.close();
    }
  });

  test('say while a realtime answer plays: after the answer (after_turn); with interrupt the answer is cancelled and it is spoken at once', async () => {
    const ANSWER_1 = 'Berlin has many parks. It has lakes too.';
    reply = () => ({ say: ANSWER_1 });
    const deviceId = 'e8:00:00:00:00:08';
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId, clientId: 'client-e8-08' });
    try {
      await dev.hello();
      const from = dev.json.length;
      dev.listen('detect', { text: 'Tell me about Berlin.' });
      await dev.waitJson('tts', 'start', 15_000, from);
      const started = dev.audio.length;
      await dev.waitFor('answer frames', () => dev.audio.length > started + 3, 15_000);
      const r = await srv.push.say({ deviceId, text: 'Your tea is ready.', source: 'admin' });
      assert.equal(r.status, 'after_turn');
      await dev.waitFor('the message spoken', () => captions(dev, from).includes('Your tea is ready.'), 15_000);
      const spokeAt = dev.json.findIndex((j, i) => i >= from && j.msg.text === 'Your tea is ready.');
      await dev.waitJson('tts', 'stop', 15_000, spokeAt);
      assert.deepEqual(
        captions(dev, from),
        ['Berlin has many parks.', 'It has lakes too.', 'Your tea is ready.'],
        'the whole answer first, then the message',
      );
      const session = fake.sessions.at(-1);
      assert.ok(session);
      assert.equal(session.cancels.length, 0, 'the answer was not cut');
      await waitFor(() => session.items.some((i) => JSON.stringify(i).includes('Your tea is ready.')), {
        what: 'the message told to the model',
      });

      reply = () => ({ say: 'Once upon a time there was a speaker who talked on and on about everything it knew.' });
      const from2 = dev.json.length;
      dev.listen('detect', { text: 'Tell me a story.' });
      await dev.waitJson('tts', 'start', 15_000, from2);
      const started2 = dev.audio.length;
      await dev.waitFor('story frames', () => dev.audio.length > started2 + 3, 15_000);
      const i = await srv.push.say({ deviceId, text: 'The door bell rang.', source: 'admin', interrupt: true });
      assert.equal(i.status, 'spoken');
      await waitFor(() => session.cancels.length === 1, { what: 'response.cancel at the stand-in' });
      await waitFor(() => session.truncates.length === 1, { what: 'the truncate at what was played' });
      await dev.waitFor('the bell spoken', () => captions(dev, from2).includes('The door bell rang.'), 15_000);
      const bellAt = dev.json.findIndex((j, n) => n >= from2 && j.msg.text === 'The door bell rang.');
      await dev.waitJson('tts', 'stop', 15_000, bellAt);
      // Give the cancelled story the time it would have needed.
      await sleep(1500);
      assert.equal(captions(dev, bellAt).length, 1, 'nothing of the story after the bell');
      assert.ok(
        !captions(dev, from2).some((t) => t.startsWith('Once upon a time there was a speaker who talked')),
        'the story was not finished',
      );
      await waitFor(() => session.items.some((it) => JSON.stringify(it).includes('The door bell rang.')), {
        what: 'the bell told to the model',
      });
    } finally {
      dev.close();
    }
  });

  test("memory: the device's fact is in the session's instructions; both transcripts land in the history", async () => {
    const pair = { deviceId: 'e8:00:00:00:00:05', clientId: 'client-e8-05' };
    await srv.app.store.memory.remember(pair, 'default', 'The user has a cat called Miso.');
    reply = () => ({ say: 'It is sunny in Berlin.' });
    const dev = new DeviceSim({ url: srv.wsUrl, ...pair });
    try {
      await dev.hello();
      await ask(dev, question);
      const session = fake.sessions.at(-1);
      assert.match(String(session?.session.instructions), /Miso/, 'the fact is in the instructions');
      let turns: Awaited<ReturnType<typeof srv.app.store.memory.history>> = [];
      await waitFor(
        async () => {
          turns = await srv.app.store.memory.history(pair.deviceId, 10);
          return turns.some((t) => t.role === 'assistant') && turns.some((t) => t.role === 'user');
        },
        { what: 'both transcripts in the history', timeoutMs: 10_000 },
      );
      assert.ok(turns.some((t) => t.role === 'user' && t.text === QUESTION));
      assert.ok(turns.some((t) => t.role === 'assistant' && /sunny in Berlin/.test(t.text)));
    } finally {
      dev.close();
    }
  });
});

/** A device on MQTT+UDP, through OTA's mqtt section. */
async function mqttDevice(srv: VoiceApp, deviceId: string): Promise<MqttUdpClient> {
  const res = await fetch(`${srv.httpUrl}/xiaozhi/ota/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'device-id': deviceId, 'client-id': `mqtt-${deviceId}` },
    body: JSON.stringify({ application: { version: '2.4.2' }, board: { type: 'bread-compact-wifi' } }),
  });
  const section = ((await res.json()) as { mqtt: MqttSection }).mqtt;
  const dev = await MqttUdpClient.connect(section);
  await dev.hello();
  return dev;
}

/** Speaks `packets` from an MQTT device at the firmware's pace; the answer's frames. */
async function askMqtt(dev: MqttUdpClient, packets: Buffer[]): Promise<{ stt: unknown; frames: number; rms: number }> {
  const from = dev.json.length;
  const audioFrom = dev.audio.length;
  dev.publish({ type: 'listen', state: 'start', mode: 'auto', session_id: dev.sessionId });
  const start = performance.now();
  for (let i = 0; i < packets.length; i++) {
    if (dev.json.slice(from).some((j) => j.msg.type === 'tts')) break;
    const wait = start + i * 60 - performance.now();
    if (wait > 0) await sleep(wait);
    dev.sendOpus(packets[i] as Buffer);
  }
  await waitFor(() => dev.json.slice(from).some((j) => j.msg.type === 'tts' && j.msg.state === 'stop'), {
    what: 'tts stop on the MQTT device',
    timeoutMs: 30_000,
  });
  const stt = dev.json.slice(from).find((j) => j.msg.type === 'stt')?.msg.text;
  const decoded = await decodeDownlink(dev.audio.slice(audioFrom).map((a) => a.payload));
  return { stt, frames: dev.audio.length - audioFrom, rms: decoded.rms };
}

for (const dialect of ['openai', 'qwen'] as const) {
  describe(`a realtime agent over plain ws: (${dialect} dialect), on an MQTT+UDP device`, () => {
    let fake: FakeRealtimeModel;
    let llm: FakeOpenAi;
    let srv: VoiceApp;
    let question: Buffer[];
    const seen: RespondContext[] = [];

    before(async () => {
      fake = await startFakeRealtimeModel({
        dialect,
        transcribe: () => QUESTION,
        respond: (ctx) => {
          seen.push(ctx);
          return ctx.functionOutput || ctx.index > 0
            ? { say: 'It is noon in Berlin.' }
            : { call: { name: 'get_current_datetime', arguments: '{}' } };
        },
      });
      llm = await startFakeOpenAi();
      // An agent in the configuration, as an operator switches one: the default stays the cascade.
      srv = await startVoiceApp(llm.url, {
        mqtt: { enabled: true, host: '127.0.0.1', port: 0, udpPort: 0 },
        agents: [
          {
            name: 'omni',
            pipeline: 'realtime',
            realtime: {
              provider: 'openai-realtime',
              dialect: dialect === 'qwen' ? 'qwen-omni' : 'openai',
              baseURL: fake.url.replace(/^http:/, 'ws:'),
            },
            devices: ['e8:00:00:00:01:01'],
          },
        ],
        defaultAgent: 'omni',
      });
      question = await utterancePackets(trimSilence(speak16k(QUESTION)), 400, 2000);
    });
    after(async () => {
      await closeAll(srv, fake, llm);
    });

    test('a spoken question with a tool call is answered with audio over UDP', async () => {
      const dev = await mqttDevice(srv, 'e8:00:00:00:01:01');
      try {
        const a = await askMqtt(dev, question);
        assert.equal(a.stt, QUESTION);
        assert.ok(a.frames > 5 && a.rms > 100, `answer frames: ${a.frames}`);
        assert.ok(
          seen.some((c) => c.functionOutput?.name === 'get_current_datetime'),
          'the tool result went back',
        );
        const session = fake.sessions.at(-1);
        assert.ok(session);
        const rate = dialect === 'qwen' ? 16_000 : 24_000;
        // The audio went at the dialect's rate: about as long as the question was.
        const seconds = session.audio.length / 2 / rate;
        assert.ok(seconds > 1 && seconds < 10, `${seconds.toFixed(2)} s of user audio at ${rate} Hz`);
        if (dialect === 'qwen')
          assert.ok(
            session.updates.some((u) => 'voice' in u),
            'the flat (beta) session shape',
          );
        assert.equal(llm.requests.length, 0, 'the cascade model is not asked');
      } finally {
        await dev.close();
      }
    });
  });
}

/** The failed turn's apology (apologies.llm: a realtime answer is the model part), short so the case does not wait for it. */
const APOLOGY = 'Sorry, the model failed.';
const ANSWER = 'It is noon in Berlin.';
const AGAIN = 'Fine again.';

/** Each fault's defined outcome: whether the turn ends in the apology or the answer still plays. */
const FAULTS: Array<{ fault: FakeModelFault; outcome: string; apology: boolean }> = [
  { fault: 'unknown-events', outcome: 'dropped (logged at debug): the answer plays, no apology', apology: false },
  {
    fault: 'bad-audio',
    outcome: 'the audio before it plays, then the apology; the model is told response.cancel',
    apology: true,
  },
  {
    fault: 'bad-arguments',
    outcome: 'the model gets an error output for the call and answers; no apology',
    apology: false,
  },
  { fault: 'error-mid-response', outcome: 'what arrived plays, then the apology', apology: true },
  {
    fault: 'close-mid-response',
    outcome: 'what arrived plays, then the apology; the next turn opens a new connection',
    apology: true,
  },
];

/** The sentences the device was shown (`sentence_start`) from message `from` on. */
function captions(dev: DeviceSim, from: number): string[] {
  return dev.json
    .slice(from)
    .filter((j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start')
    .map((j) => String(j.msg.text));
}

/** `tts` start and stop messages from message `from` on, in order. */
function ttsStates(dev: DeviceSim, from: number): string[] {
  return dev.json
    .slice(from)
    .filter((j) => j.msg.type === 'tts' && (j.msg.state === 'start' || j.msg.state === 'stop'))
    .map((j) => String(j.msg.state));
}

describe('bad input from the realtime model, end to end: each fault has its outcome, the next turn on the same model is answered', () => {
  /** Per fault: its stand-in, and whether its next responses are faulted (the first turn) or not. */
  const cases = new Map<FakeModelFault, { fake: FakeRealtimeModel; faulty: boolean }>();
  let llm: FakeOpenAi;
  let srv: VoiceApp;
  let question: Buffer[];

  before(async () => {
    for (const { fault } of FAULTS) {
      const c: { fake?: FakeRealtimeModel; faulty: boolean } = { faulty: true };
      c.fake = await startFakeRealtimeModel({
        transcribe: () => QUESTION,
        // The faulted turn: a tool call, then the answer from its result (so a fault can hit either).
        respond: (ctx) =>
          !c.faulty
            ? { say: AGAIN }
            : ctx.functionOutput
              ? { say: ANSWER }
              : { call: { name: 'get_current_datetime', arguments: '{}' } },
        faults: [fault],
        faultOn: () => c.faulty,
      });
      cases.set(fault, c as { fake: FakeRealtimeModel; faulty: boolean });
    }
    llm = await startFakeOpenAi();
    srv = await startVoiceApp(llm.url, {
      conversation: { apologies: { llm: APOLOGY } },
      agents: FAULTS.map(({ fault }, i) => ({
        name: fault,
        pipeline: 'realtime',
        realtime: { provider: 'openai-realtime', baseURL: cases.get(fault)?.fake.url },
        devices: [`e8:00:00:00:02:0${i}`],
      })),
    });
    // A short utterance: the stand-in hears QUESTION whatever is said, and the cases speak twice.
    question = await utterancePackets(trimSilence(speak16k('what time is it')), 300, 1500);
  });
  after(async () => {
    await closeAll(srv, llm, ...[...cases.values()].map((c) => c.fake));
  });

  FAULTS.forEach(({ fault, outcome, apology }, i) => {
    test(`${fault}: ${outcome}`, async () => {
      const deviceId = `e8:00:00:00:02:0${i}`;
      const c = cases.get(fault);
      assert.ok(c);
      c.faulty = true;
      const dev = new DeviceSim({ url: srv.wsUrl, deviceId });
      try {
        await dev.hello();
        const timelineFrom = dev.timeline.length;
        const first = await ask(dev, question);
        const session = c.fake.sessions[0];
        assert.ok(session, 'the stand-in was dialled');
        assert.deepEqual(ttsStates(dev, first.from), ['start', 'stop'], 'one tts start and one stop, as the cascade');
        const output = session.items.find((it) => it.type === 'function_call_output')?.output;
        if (fault === 'bad-arguments')
          assert.match(
            String(output),
            /^Error: Invalid arguments for tool "get_current_datetime": /,
            'the model is told',
          );
        else assert.match(String(output), /\d{4}/, "the tool's result went back");
        if (apology) {
          const shown = captions(dev, first.from);
          assert.equal(shown.at(-1), APOLOGY, `the turn ends in the apology: ${JSON.stringify(shown)}`);
          assert.equal(shown.filter((t) => t === APOLOGY).length, 1, 'one apology');
          // Before it, at most the words of the answer that arrived (its transcript so far).
          assert.ok(
            ANSWER.startsWith(shown.slice(0, -1).join(' ')),
            `only the answer's first words: ${JSON.stringify(shown)}`,
          );
          // What arrived before the fault was sent before the apology's sentence.
          const timeline = dev.timeline.slice(timelineFrom);
          const apologyAt = timeline.findIndex((t) => t.kind === 'json' && t.msg.text === APOLOGY);
          const before = timeline.slice(0, apologyAt).filter((t) => t.kind === 'audio').length;
          assert.ok(before > 0, `the answer's first audio played before the apology (${before} frames)`);
        } else {
          assert.deepEqual(captions(dev, first.from), [ANSWER], 'the answer, no apology');
          assert.ok(first.ms > 800 && first.rms > 100, `the whole answer is heard (${first.ms} ms)`);
        }
        if (fault === 'bad-audio' || fault === 'error-mid-response')
          await waitFor(() => session.cancels.length === 1, { what: 'response.cancel at the stand-in' });
        if (fault === 'unknown-events')
          assert.equal(
            srv.logs.lines.filter(
              (l) => l.deviceId === deviceId && l.msg === 'openai-realtime: an event type we do not read, dropped',
            ).length,
            4,
            'two unknown events in each of the two responses, each logged',
          );
        assert.equal(dev.ws.readyState, 1, 'the session stays up');

        // The next turn, same session, same agent and model, no fault: answered.
        c.faulty = false;
        const next = await ask(dev, question);
        assert.deepEqual(captions(dev, next.from), [AGAIN], 'the next turn is answered');
        assert.ok(next.frames > 5 && next.rms > 100);
        assert.equal(
          c.fake.sessions.length,
          fault === 'close-mid-response' ? 2 : 1,
          fault === 'close-mid-response' ? 'a new connection' : 'the same connection',
        );
      } finally {
        dev.close();
      }
    });
  });
});
