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
 * - bad input from the model (unknown events, undecodable audio, bad function JSON, an error
 *   mid-response, a closed socket): the device hears an apology or the answer, the session stays
 *   up, the next turn works.
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
      realtime: { provider: 'openai-realtime', baseURL: fake.url, apiKey: KEY, ca: ca.caFile, model: 'gpt-realtime' },
      logging: { level: 'debug' },
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

const FAULTS: Array<{ fault: FakeModelFault; outcome: string }> = [
  { fault: 'unknown-events', outcome: 'ignored: the answer is heard' },
  { fault: 'bad-audio', outcome: 'the undecodable delta is dropped: the rest of the answer is heard' },
  { fault: 'bad-arguments', outcome: 'the model is told the arguments are not JSON, or the turn apologises' },
  { fault: 'error-mid-response', outcome: 'what arrived plays, then the apology' },
  { fault: 'close-mid-response', outcome: 'what arrived plays, then the apology; the next turn reconnects' },
];

describe('bad input from the realtime model, end to end: the device hears audio, the session stays, the next turn works', () => {
  const fakes = new Map<string, FakeRealtimeModel>();
  let good: FakeRealtimeModel;
  let llm: FakeOpenAi;
  let srv: VoiceApp;
  let question: Buffer[];

  before(async () => {
    const respond = (ctx: RespondContext): FakeReply =>
      ctx.index === 0 && !ctx.functionOutput
        ? { call: { name: 'get_current_datetime', arguments: '{}' } }
        : { say: 'It is noon in Berlin, and the sun is out over the river.' };
    for (const { fault } of FAULTS)
      fakes.set(fault, await startFakeRealtimeModel({ transcribe: () => QUESTION, respond, faults: [fault] }));
    good = await startFakeRealtimeModel({ transcribe: () => QUESTION, respond: () => ({ say: 'Fine again.' }) });
    llm = await startFakeOpenAi();
    const block = (url: string) => ({ provider: 'openai-realtime', baseURL: url, responseTimeoutMs: 5000 });
    srv = await startVoiceApp(llm.url, {
      agents: [
        { name: 'good', pipeline: 'realtime', realtime: block(good.url) },
        ...FAULTS.map(({ fault }, i) => ({
          name: fault,
          pipeline: 'realtime',
          realtime: block((fakes.get(fault) as FakeRealtimeModel).url),
          devices: [`e8:00:00:00:02:0${i}`],
        })),
      ],
    });
    question = await utterancePackets(trimSilence(speak16k(QUESTION)), 400, 2000);
  });
  after(async () => {
    await closeAll(srv, good, llm, ...fakes.values());
  });

  FAULTS.forEach(({ fault, outcome }, i) => {
    test(`${fault}: ${outcome}`, async () => {
      const deviceId = `e8:00:00:00:02:0${i}`;
      const dev = new DeviceSim({ url: srv.wsUrl, deviceId });
      try {
        await dev.hello();
        const first = await ask(dev, question);
        assert.ok(first.frames > 0 && first.rms > 100, `the device heard something (${first.frames} frames)`);
        assert.ok(fakes.get(fault)?.sessions.length, 'the faulty stand-in was dialled');
        assert.equal(dev.ws.readyState, 1, 'the session stays up');
        // The operator moves the device to a sound model: its next turn, same session, answers.
        await srv.app.store.devices.update(deviceId, { agent: 'good' });
        await sleep(300);
        const before = good.sessions.length;
        const next = await ask(dev, question);
        assert.ok(next.frames > 0 && next.rms > 100, 'the next turn is answered');
        assert.ok(good.sessions.length > before, "the next turn went to the agent's new model");
      } finally {
        dev.close();
      }
    });
  });
});
