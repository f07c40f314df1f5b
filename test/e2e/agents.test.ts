/**
 * Each device talks to its own agent: the real server (media workers, provider thread) on a
 * loopback port, real WebSocket devices, the fake OpenAI server recording every chat and speech
 * request. Two devices on two agents get their agent's system prompt, model and voice at the same
 * time; a change of a device's agent, or of an agent's prompt, applies from the device's next turn
 * without a reconnect; an agent's clients are built once and shared by its devices.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DeviceSim } from '../fixtures/device-sim.ts';
import { startFakeOpenAi, type FakeMessage, type FakeOpenAi, type RecordedRequest } from '../fixtures/fake-openai.ts';
import { startFakeOpenAiAudio, type FakeOpenAiAudio } from '../fixtures/fake-openai-audio.ts';
import { startVoiceApp, type VoiceApp } from '../helpers/voice-app.ts';
import { closeAll } from '../helpers/close-all.ts';
import { fixtureEntry } from '../integration/mcp/mcp-test-helpers.ts';
import { decodeDownlink } from '../helpers/speech.ts';

const KITCHEN_1 = 'a6:00:00:00:00:01';
const KITCHEN_2 = 'a6:00:00:00:00:02';
const STUDY = 'a6:00:00:00:00:03';
const PLAIN_1 = 'a6:00:00:00:00:04';
const PLAIN_2 = 'a6:00:00:00:00:05';
const HIGH = 'a6:00:00:00:00:06';

function systemText(r: RecordedRequest | undefined): string {
  const m: FakeMessage | undefined = r?.body.messages[0];
  return m?.role === 'system' && typeof m.content === 'string' ? m.content : '';
}

function lastUser(r: RecordedRequest): string {
  const u = [...r.body.messages].reverse().find((m) => m.role === 'user');
  return typeof u?.content === 'string' ? u.content : '';
}

describe('agents: each device talks to its own assistant', { timeout: 120_000 }, () => {
  let llm: FakeOpenAi;
  let audio: FakeOpenAiAudio;
  let srv: VoiceApp;
  const secrets: string[] = [];

  const speech = (voice: string) => ({
    provider: 'openai',
    baseURL: '',
    apiKey: 'sk-agent-tts',
    model: 'tts-1',
    voice,
    format: 'wav',
  });

  before(async () => {
    llm = await startFakeOpenAi();
    audio = await startFakeOpenAiAudio();
    const declared = [
      {
        name: 'kitchen',
        systemPrompt: 'You are the kitchen helper.',
        llm: { model: 'model-kitchen', temperature: 0.3 },
        tts: { ...speech('alloy'), baseURL: audio.baseURL },
        devices: [KITCHEN_1, KITCHEN_2],
      },
      {
        name: 'study',
        systemPrompt: 'You are the study tutor.',
        greeting: 'Hello, student.',
        llm: { model: 'model-study', apiKey: 'sk-study-agent-key' },
        tts: { ...speech('nova'), baseURL: audio.baseURL },
        // No MCP server, one local tool.
        tools: { mcpServers: [], local: ['get_current_datetime'] },
        devices: [STUDY],
      },
      // The configured embedded voice, and an embedded voice of its own.
      { name: 'plain', devices: [PLAIN_1, PLAIN_2] },
      { name: 'high', tts: { provider: 'espeak', voice: 'en-us+f3', pitch: 80 }, devices: [HIGH] },
    ];
    // As in production: the configuration's agents are created in the store (SQLite) at start, and
    // the devices' agents are read from its cache.
    srv = await startVoiceApp(llm.url, { agents: declared, mcpServers: { fx: fixtureEntry() } }, undefined, {
      onSecret: (v) => secrets.push(v),
    });
    // The agents' remote voices are made in the background as soon as the agents are known.
    await srv.deps.profiles.ready();
  });
  after(async () => {
    await closeAll(srv, audio, llm);
  });

  /** Says `text` (typed, as `listen detect`) and waits for the answer to end; returns the chat request it made. */
  async function ask(dev: DeviceSim, text: string): Promise<RecordedRequest> {
    const from = dev.json.length;
    dev.listen('detect', { text });
    await dev.waitJson('tts', 'stop', 20_000, from);
    const req = [...llm.requests].reverse().find((r) => lastUser(r) === text);
    assert.ok(req, `the model was asked "${text}"`);
    return req;
  }

  const voiceFor = (text: string): string | undefined =>
    audio.speeches.find((s) => s.body.input === `You said: ${text}.`)?.body.voice;

  test('two devices on two agents get two system prompts, models and voices in the same minute', async () => {
    const kitchen = new DeviceSim({ url: srv.wsUrl, deviceId: KITCHEN_1 });
    const study = new DeviceSim({ url: srv.wsUrl, deviceId: STUDY });
    try {
      await Promise.all([kitchen.hello(), study.hello()]);
      const [k, s] = await Promise.all([ask(kitchen, 'what is for dinner'), ask(study, 'what is for homework')]);
      assert.match(systemText(k), /^You are the kitchen helper\./);
      assert.equal(k.body.model, 'model-kitchen');
      assert.equal(k.body.temperature, 0.3);
      assert.match(systemText(s), /^You are the study tutor\./);
      assert.equal(s.body.model, 'model-study');
      assert.equal(s.headers.authorization, 'Bearer sk-study-agent-key');
      assert.equal(voiceFor('what is for dinner'), 'alloy');
      assert.equal(voiceFor('what is for homework'), 'nova');
      assert.ok(secrets.includes('sk-study-agent-key'), "the agent's key is registered for log redaction");
      // Each agent's tools: the kitchen may use everything, the study one local tool.
      const toolNames = (r: RecordedRequest): string[] => (r.body.tools ?? []).map((t) => t.function.name);
      assert.ok(
        toolNames(k).includes('end_conversation') && toolNames(k).some((n) => n.startsWith('fx__')),
        JSON.stringify(toolNames(k)),
      );
      assert.deepEqual(toolNames(s), ['get_current_datetime']);
      // The wake word's greeting is the agent's, in its voice.
      const from = study.json.length;
      study.listen('detect', { text: 'hi xiaozhi' });
      await study.waitJson('tts', 'stop', 20_000, from);
      const said = study.json
        .slice(from)
        .filter((j) => j.msg.state === 'sentence_start')
        .map((j) => j.msg.text);
      assert.deepEqual(said, ['Hello, student.']);
      assert.equal(audio.speeches.find((x) => x.body.input === 'Hello, student.')?.body.voice, 'nova');
    } finally {
      kitchen.close();
      study.close();
    }
  });

  test("an agent's embedded voice: the media worker speaks with it for that agent's devices only", async () => {
    /** The greeting's zero crossings per second: a higher voice crosses zero more often. */
    const greet = async (deviceId: string): Promise<number> => {
      const dev = new DeviceSim({ url: srv.wsUrl, deviceId });
      try {
        await dev.hello();
        dev.listen('detect', { text: 'hi xiaozhi' });
        await dev.waitJson('tts', 'stop', 20_000);
        const { pcm, ms, rms } = await decodeDownlink(dev.audio.map((a) => a.payload));
        assert.ok(ms > 500 && rms > 300, 'the greeting was spoken');
        let crossings = 0;
        for (let i = 1; i < pcm.length; i++) if ((pcm[i - 1] ?? 0) < 0 !== (pcm[i] ?? 0) < 0) crossings++;
        return crossings / (ms / 1000);
      } finally {
        dev.close();
      }
    };
    const plain1 = await greet(PLAIN_1);
    const plain2 = await greet(PLAIN_2);
    const high = await greet(HIGH);
    assert.ok(
      Math.abs(plain2 - plain1) < plain1 * 0.1,
      `the same voice: ${Math.round(plain1)} and ${Math.round(plain2)} crossings/s`,
    );
    assert.ok(
      high > plain1 * 1.2,
      `the agent's own, higher voice: ${Math.round(high)} against ${Math.round(plain1)} crossings/s`,
    );
  });

  test("an agent's clients are built once and shared by its devices", async () => {
    const before = await srv.deps.providers.clients();
    const devices = [KITCHEN_1, KITCHEN_2].map((deviceId) => new DeviceSim({ url: srv.wsUrl, deviceId }));
    try {
      await Promise.all(devices.map((d) => d.hello()));
      const reqs = await Promise.all(devices.map((d, i) => ask(d, `kitchen question ${i}`)));
      for (const r of reqs) assert.equal(r.body.model, 'model-kitchen');
      assert.equal(srv.deps.profiles.builds('kitchen'), 1, 'one profile for the agent, whatever the number of devices');
      const after = await srv.deps.providers.clients();
      assert.equal(after.llm.created, before.llm.created, 'no new LLM client for more devices of a known agent');
      // The configured client and one per agent.
      assert.equal(after.llm.created, 3);
    } finally {
      for (const d of devices) d.close();
    }
  });

  test("changing an agent's prompt, then a device's agent, while it is connected changes its next answer", async () => {
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId: STUDY });
    try {
      await dev.hello();
      const first = await ask(dev, 'first question');
      assert.match(systemText(first), /^You are the study tutor\./);

      const study = await srv.app.store.agents.get('study');
      assert.ok(study);
      await srv.app.store.agents.update('study', {
        ...study.settings,
        systemPrompt: 'You are the new tutor.',
        llm: { model: 'model-study', apiKey: 'sk-study-rotated-key' },
      });
      const second = await ask(dev, 'second question');
      assert.match(systemText(second), /^You are the new tutor\./);
      assert.equal(second.headers.authorization, 'Bearer sk-study-rotated-key');
      assert.ok(secrets.includes('sk-study-rotated-key'), 'a changed key is registered for log redaction too');
      // The history goes on under the new prompt: the first exchange is still there.
      assert.ok(second.body.messages.some((m) => m.role === 'user' && m.content === 'first question'));

      await srv.app.store.devices.update(STUDY, { agent: 'kitchen' });
      const third = await ask(dev, 'third question');
      assert.match(systemText(third), /^You are the kitchen helper\./);
      assert.equal(third.body.model, 'model-kitchen');
      assert.equal(voiceFor('third question'), 'alloy');
      assert.equal(srv.deps.profiles.builds('study'), 2, 'the changed agent was built again, once');
    } finally {
      dev.close();
    }
  });
});
