/**
 * Agents in the configuration (`agents:`, `defaultAgent`) and what an agent resolves to: config
 * errors that name the problem, settings over the configuration with the agent's language presets
 * for what it leaves unset, one profile per distinct settings shared by the agent's devices, and
 * an old profile's remote voice closed only once no turn holds it.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../../../core/logger.ts';
import type { Asr } from '../../../audio/asr/asr.ts';
import type { Tts } from '../../../audio/tts/tts.ts';
import type { LlmClient } from '../../../llm/types.ts';
import { ConfigSchema, describeIssues, type Config } from '../../../server/config.ts';
import { configAgentLookup } from '../../../features/agents/agent-lookup.ts';
import { AgentProfiles, CONFIG_AGENT } from '../../../features/agents/agent-profiles.ts';
import { resolveAgent } from '../../../features/agents/resolve-agent.ts';
import { LANGUAGE_PACKS } from '../../../features/agents/language.ts';
import { createLogger } from '../../../server/logger.ts';
import { createLogSink } from '../../helpers/log-sink.ts';

function configError(raw: Record<string, unknown>): string {
  const r = ConfigSchema.safeParse(raw);
  assert.equal(r.success, false, 'the configuration is refused');
  return r.success ? '' : describeIssues(r.error);
}

describe('agents in the configuration', () => {
  test('agents and defaultAgent are accepted; devices default to none', () => {
    const c = ConfigSchema.parse({
      agents: [
        { name: 'kitchen', systemPrompt: 'Cook.' },
        { name: 'study', devices: ['aa:bb:cc:dd:ee:ff'] },
      ],
      defaultAgent: 'study',
    });
    assert.deepEqual(
      c.agents.map((a) => [a.name, a.devices]),
      [
        ['kitchen', []],
        ['study', ['aa:bb:cc:dd:ee:ff']],
      ],
    );
    assert.equal(c.defaultAgent, 'study');
    assert.deepEqual(ConfigSchema.parse({}).agents, []);
  });

  test('a name declared twice, a defaultAgent not declared, an MCP server not configured: errors naming the key', () => {
    assert.match(
      configError({ agents: [{ name: 'a' }, { name: 'a' }] }),
      /agents\.1\.name: agent 'a' is declared twice/,
    );
    assert.match(
      configError({ agents: [{ name: 'a' }], defaultAgent: 'b' }),
      /defaultAgent: 'b' is not one of the agents/,
    );
    assert.match(configError({ defaultAgent: 'b' }), /defaultAgent: 'b' is not one of the agents/);
    assert.match(
      configError({
        mcpServers: { weather: { command: 'node', args: ['w.js'] } },
        agents: [{ name: 'a', tools: { mcpServers: ['weather', 'calendar'] } }],
      }),
      /agents\.0\.tools\.mcpServers\.1: agent 'a' names MCP server 'calendar', which is not in mcpServers/,
    );
    assert.match(configError({ agents: [{ name: 'bad name' }] }), /agents\.0\.name/);
    assert.match(configError({ agents: [{ name: 'a', voice: 'x' }] }), /agents\.0/);
  });
});

describe('an agent over the configuration', () => {
  const config = ConfigSchema.parse({
    llm: { baseURL: 'http://127.0.0.1:9/v1', model: 'base-model', apiKey: 'sk-base', systemPrompt: 'Base prompt.' },
    asr: { provider: 'openai', baseURL: 'http://127.0.0.1:9/v1' },
    conversation: { greeting: 'Hello from the base.' },
  });

  test('unset keys come from the configuration', () => {
    const r = resolveAgent(config, {});
    assert.equal(r.systemPrompt, 'Base prompt.');
    assert.equal(r.greeting, 'Hello from the base.');
    assert.equal(r.llm.model, 'base-model');
    assert.equal(r.llm.apiKey, 'sk-base');
    assert.deepEqual(r.asr, config.asr);
    assert.deepEqual(r.tts, config.tts);
    assert.deepEqual(r.tools, {});
  });

  test('set keys win, the LLM block field by field', () => {
    const r = resolveAgent(config, {
      systemPrompt: 'Agent prompt.',
      llm: { model: 'agent-model', temperature: 0.1 },
      tools: { local: ['get_current_datetime'] },
    });
    assert.equal(r.systemPrompt, 'Agent prompt.');
    assert.equal(r.llm.model, 'agent-model');
    assert.equal(r.llm.temperature, 0.1);
    assert.equal(r.llm.apiKey, 'sk-base', "the key it left unset is the configuration's");
    assert.equal(r.llm.baseURL, 'http://127.0.0.1:9/v1');
    assert.deepEqual(r.tools, { local: ['get_current_datetime'] });
  });

  test('an agent speaking another language takes its presets for what it leaves unset', () => {
    const zh = LANGUAGE_PACKS.zh;
    const r = resolveAgent(config, { language: 'zh' });
    assert.equal(r.systemPrompt, zh.systemPrompt);
    assert.equal(r.greeting, zh.conversation.greeting);
    assert.deepEqual(r.apologies, zh.conversation.apologies);
    assert.equal(r.asr.provider === 'openai' && r.asr.language, 'zh');
    assert.equal(r.tts.provider === 'espeak' && r.tts.voice, 'cmn-latn-pinyin');
    const own = resolveAgent(config, { language: 'zh', greeting: '喂', tts: { provider: 'espeak', voice: 'yue' } });
    assert.equal(own.greeting, '喂');
    assert.equal(own.tts.provider === 'espeak' && own.tts.voice, 'yue', 'a voice it wrote stays');
    // Declared in the configuration, its settings went through the schema (which fills in the English voice).
    const declared = ConfigSchema.parse({
      agents: [{ name: 'zh', language: 'zh', tts: { provider: 'espeak', speed: 150 } }],
    }).agents[0];
    assert.ok(declared);
    const { name: _name, devices: _devices, ...settings } = declared;
    const fromConfig = resolveAgent(config, settings);
    assert.deepEqual(fromConfig.tts, { provider: 'espeak', voice: 'cmn-latn-pinyin', speed: 150, pitch: 50 });
    // Its own language is the configuration's: the configuration's (edited) texts stay.
    assert.equal(resolveAgent(config, { language: 'en' }).greeting, 'Hello from the base.');
  });
});

/** Clients that only count how they were asked for. */
function fakeClients() {
  const made: string[] = [];
  return {
    made,
    clients: {
      llmFor: (o: { model: string }): LlmClient => {
        made.push(`llm:${o.model}`);
        return { model: o.model, stream: () => (async function* () {})() };
      },
      asrFor: (o: { provider: string }): Asr => {
        made.push(`asr:${o.provider}`);
        return { name: o.provider, transcribe: async () => '', close: async () => {} };
      },
    },
  };
}

function remoteTts(voice: string, closed: string[]): Tts {
  return {
    name: 'openai',
    synthesis: 'stream',
    outputFormat: { container: 'wav' },
    synthesize: () => (async function* () {})(),
    close: async () => {
      closed.push(voice);
    },
  };
}

describe('agent profiles', () => {
  const base = {
    asr: { name: 'base', transcribe: async () => '', close: async () => {} } satisfies Asr,
    tts: { name: 'espeak', synthesis: 'media-worker', voice: { voice: 'en-us' }, close: async () => {} } satisfies Tts,
  };
  const tts = (voice: string) => ({ provider: 'openai', baseURL: 'http://127.0.0.1:9/v1', voice });

  function setup(raw: Record<string, unknown>, log = silentLogger) {
    const config: Config = ConfigSchema.parse(raw);
    const lookup = configAgentLookup(config);
    const { made, clients } = fakeClients();
    const closed: string[] = [];
    const secrets: string[] = [];
    const profiles = new AgentProfiles({
      config,
      lookup,
      log,
      base,
      clients,
      onSecret: (v) => secrets.push(v),
      createTts: async (o) => remoteTts(o.provider === 'openai' ? o.voice : 'espeak', closed),
    });
    return { config, lookup, profiles, made, closed, secrets };
  }

  test('no agents: the configuration is the default agent, with its own providers', () => {
    const { profiles } = setup({});
    const held = profiles.profileFor('aa:00:00:00:00:01');
    assert.equal(held.profile.agent, CONFIG_AGENT);
    assert.equal(held.profile.tts, base.tts);
    assert.equal(held.profile.asr, base.asr);
    assert.equal(profiles.profileFor(null).profile, held.profile, 'one profile for every device');
  });

  test('devices get their agent, others the default (defaultAgent, else the first); one profile per agent, shared', async () => {
    const { profiles, made, secrets } = setup({
      agents: [
        { name: 'a', llm: { model: 'model-a', apiKey: 'sk-agent-a-key' }, devices: ['d1', 'd2'] },
        { name: 'b', llm: { model: 'model-b' }, tts: tts('nova') },
      ],
    });
    await profiles.ready();
    const [p1, p2, p3] = ['d1', 'd2', 'd3'].map((d) => profiles.profileFor(d).profile);
    assert.equal(p1?.agent, 'a');
    assert.equal(p1, p2, "shared by the agent's devices");
    assert.equal(p3?.agent, 'a', 'the first agent is the default');
    assert.equal(profiles.builds('a'), 1);
    assert.deepEqual(
      made.filter((m) => m === 'llm:model-a'),
      ['llm:model-a'],
      'one LLM client asked for',
    );
    assert.ok(secrets.includes('sk-agent-a-key'));
    assert.equal(
      setup({ agents: [{ name: 'a' }, { name: 'b' }], defaultAgent: 'b' }).profiles.profileFor('dx').profile.agent,
      'b',
    );
  });

  test('a changed agent is built again; the old remote voice is closed once no turn holds it', async () => {
    const { profiles, lookup, closed } = setup({
      agents: [{ name: 'a', systemPrompt: 'One.', tts: tts('alloy'), devices: ['d1'] }],
    });
    await profiles.ready();
    const held = profiles.profileFor('d1');
    assert.equal(
      held.profile.tts.synthesis === 'stream' && held.profile.tts.name,
      'openai',
      "the agent's remote voice",
    );
    lookup.setAgent('a', { systemPrompt: 'Two.', tts: tts('echo') });
    await profiles.ready();
    const next = profiles.profileFor('d1');
    assert.equal(next.profile.systemPrompt, 'Two.');
    assert.equal(profiles.builds('a'), 2);
    assert.deepEqual(closed, [], 'the old voice is still held by a turn');
    held.release();
    assert.deepEqual(closed, ['alloy']);
    // Only the prompt changes: the voice is the same options, kept.
    lookup.setAgent('a', { systemPrompt: 'Three.', tts: tts('echo') });
    next.release();
    assert.equal(profiles.profileFor('d1').profile.systemPrompt, 'Three.');
    assert.deepEqual(closed, ['alloy']);
    // A device moved to an agent that is then deleted falls back to the default (the configuration here).
    lookup.deleteAgent('a');
    assert.equal(profiles.profileFor('d1').profile.agent, CONFIG_AGENT);
    await profiles.close();
  });

  test("a voice that could not be made, then made for another agent: retiring the first agent leaves the other's voice open", async () => {
    const config: Config = ConfigSchema.parse({ agents: [{ name: 'a', tts: tts('alloy'), devices: ['d1'] }] });
    const lookup = configAgentLookup(config);
    const closed: string[] = [];
    let attempts = 0;
    const profiles = new AgentProfiles({
      config,
      lookup,
      log: silentLogger,
      base,
      clients: fakeClients().clients,
      createTts: async (o) => {
        if (++attempts === 1) throw new Error('voice service down');
        return remoteTts(o.provider === 'openai' ? o.voice : 'espeak', closed);
      },
    });
    await profiles.ready();
    const heldA = profiles.profileFor('d1');
    assert.equal(heldA.profile.tts, base.tts, "the configured voice speaks while the agent's could not be made");
    lookup.setAgent('b', { tts: tts('alloy') });
    await profiles.ready();
    lookup.setDeviceAgent('d2', 'b');
    const heldB = profiles.profileFor('d2');
    assert.equal(heldB.profile.tts.name, 'openai', 'b has the voice, made at the second attempt');
    lookup.setAgent('a', { tts: tts('echo') });
    heldA.release();
    await profiles.ready();
    assert.deepEqual(closed, [], "b's voice is not closed by a's old profile");
    heldB.release();
    await profiles.close();
  });

  test('an agent speaking Chinese over the English-only embedded recogniser is warned about once, naming the agent', () => {
    const logs = createLogSink();
    const { profiles } = setup(
      { agents: [{ name: 'zh-room', language: 'zh', devices: ['d1'] }, { name: 'en-room' }] },
      createLogger({ level: 'warn', logContent: false, destination: logs.stream }),
    );
    profiles.profileFor('d1');
    profiles.profileFor('d1');
    const warned = logs.lines.filter(
      (l) => typeof l.msg === 'string' && l.msg.startsWith('language is zh but asr.provider is pocketsphinx'),
    );
    assert.equal(warned.length, 1);
    assert.equal(warned[0]?.agent, 'zh-room');
  });

  test("an agent's OpenAI ASR is its own provider-thread client; pocketsphinx stays the server's one process", () => {
    const logs = createLogSink();
    const { profiles, made } = setup(
      {
        agents: [
          {
            name: 'remote',
            asr: { provider: 'openai', baseURL: 'http://127.0.0.1:9/v1', model: 'agent-whisper' },
            devices: ['d1'],
          },
          { name: 'grammar', asr: { provider: 'pocketsphinx', grammar: 'commands.gram' }, devices: ['d2'] },
        ],
      },
      createLogger({ level: 'warn', logContent: false, destination: logs.stream }),
    );
    const remote = profiles.profileFor('d1').profile;
    assert.notEqual(remote.asr, base.asr);
    assert.deepEqual(
      made.filter((m) => m.startsWith('asr:')),
      ['asr:openai'],
    );
    assert.equal(profiles.profileFor('d2').profile.asr, base.asr);
    assert.equal(
      logs.find('this ASR runs as one process for the whole server: the agent uses the configured ASR')[0]?.agent,
      'grammar',
    );
  });

  test("an agent's streaming ASR (a WebSocket per utterance) is its own, not the configured one", () => {
    const logs = createLogSink();
    const { profiles } = setup(
      {
        agents: [
          {
            name: 'doubao',
            asr: { provider: 'volcengine', url: 'wss://127.0.0.1:9/asr', appKey: 'app', accessKey: 'key' },
            devices: ['d1'],
          },
        ],
      },
      createLogger({ level: 'warn', logContent: false, destination: logs.stream }),
    );
    const asr = profiles.profileFor('d1').profile.asr;
    assert.notEqual(asr, base.asr);
    assert.equal(asr.name, 'volcengine');
    assert.equal(typeof asr.openStream, 'function');
    assert.equal(
      logs.find('this ASR runs as one process for the whole server: the agent uses the configured ASR').length,
      0,
    );
  });

  test("an agent's streaming ASR that cannot be made (a missing CA file) falls back to the configured one, said once", () => {
    const logs = createLogSink();
    const { profiles } = setup(
      {
        agents: [
          {
            name: 'local',
            asr: { provider: 'funasr', url: 'wss://127.0.0.1:9', ca: '/nonexistent/ca.pem' },
            devices: ['d1'],
          },
        ],
      },
      createLogger({ level: 'warn', logContent: false, destination: logs.stream }),
    );
    assert.equal(profiles.profileFor('d1').profile.asr, base.asr);
    const warned = logs.find("the agent's ASR could not be made: the agent uses the configured ASR");
    assert.equal(warned.length, 1);
    assert.match(String(warned[0]?.err), /cannot read \/nonexistent\/ca\.pem/);
  });

  test('a device whose agent is gone uses the default agent', () => {
    const { profiles } = setup({ agents: [{ name: 'a' }, { name: 'b' }], defaultAgent: 'b' });
    const lookup = {
      agentNameOf: () => 'deleted',
      agent: (n: string) => (n === 'b' ? { name: 'b', settings: {}, createdAt: '', updatedAt: '' } : undefined),
      agents: () => [],
      onChange: () => () => {},
    };
    const stale = new AgentProfiles({
      config: ConfigSchema.parse({ agents: [{ name: 'a' }, { name: 'b' }], defaultAgent: 'b' }),
      lookup,
      log: silentLogger,
      base,
      clients: fakeClients().clients,
    });
    assert.equal(stale.profileFor('d1').profile.agent, 'b');
    assert.equal(profiles.profileFor('unknown-device').profile.agent, 'b');
  });

  test('settings that are not valid (a stored row edited by hand) fall back to the configuration', () => {
    const { profiles, lookup } = setup({ llm: { systemPrompt: 'Base.' }, agents: [{ name: 'a', devices: ['d1'] }] });
    lookup.setAgent('a', { systemPrompt: 42 });
    const p = profiles.profileFor('d1').profile;
    assert.equal(p.agent, 'a');
    assert.equal(p.systemPrompt, 'Base.');
  });
});
