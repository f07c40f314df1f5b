/**
 * Realtime (speech-to-speech) agents in the configuration and in the profiles: `pipeline` defaults
 * to the cascade; a realtime pipeline with no realtime block anywhere is refused naming the key;
 * the agent's own block wins over the configuration's; the profile carries one model per distinct
 * options, shared by agents, closed once no turn holds a profile using it; the key is registered
 * for redaction; a model that cannot be made leaves the agent on the cascade, said once.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../../../core/logger.ts';
import type { Asr } from '../../../audio/asr/asr.ts';
import type { Tts } from '../../../audio/tts/tts.ts';
import type { RealtimeModel } from '../../../llm/realtime.ts';
import type { RealtimeOptions } from '../../../providers/index.ts';
import { ConfigSchema, describeIssues, type Config } from '../../../server/config.ts';
import { configAgentLookup } from '../../../features/agents/agent-lookup.ts';
import { AgentProfiles, CONFIG_AGENT } from '../../../features/agents/agent-profiles.ts';
import { resolveAgent } from '../../../features/agents/resolve-agent.ts';
import { createLogger } from '../../../server/logger.ts';
import { createLogSink } from '../../helpers/log-sink.ts';

const RT = { provider: 'openai-realtime', baseURL: 'http://127.0.0.1:9/v1', model: 'rt-one' } as const;

function configError(raw: Record<string, unknown>): string {
  const r = ConfigSchema.safeParse(raw);
  assert.equal(r.success, false, 'the configuration is refused');
  return r.success ? '' : describeIssues(r.error);
}

describe('the realtime pipeline in the configuration', () => {
  test('the cascade by default; a realtime pipeline needs a realtime block, at the top or in the agent', () => {
    const plain = ConfigSchema.parse({});
    assert.equal(plain.pipeline, 'cascade');
    assert.equal(plain.realtime, undefined);
    assert.match(configError({ pipeline: 'realtime' }), /realtime: pipeline 'realtime' needs a realtime block/);
    assert.match(
      configError({ agents: [{ name: 'a', pipeline: 'realtime' }] }),
      /agents\.0\.realtime: agent 'a': pipeline 'realtime' needs a realtime block/,
    );
    // The configuration's block is every agent's default, as llm and tts are.
    const c = ConfigSchema.parse({ realtime: RT, agents: [{ name: 'a', pipeline: 'realtime' }] });
    assert.equal(c.realtime?.model, 'rt-one');
    assert.equal(ConfigSchema.parse({ pipeline: 'realtime', realtime: RT }).pipeline, 'realtime');
    assert.match(configError({ pipeline: 'speech' }), /pipeline/);
    assert.match(configError({ realtime: { provider: 'nobody' } }), /realtime/);
  });

  test("the agent's own block wins; unset pipeline is the configuration's; the cascade has no realtime", () => {
    const config = ConfigSchema.parse({ pipeline: 'realtime', realtime: RT });
    assert.equal(resolveAgent(config, {}).realtime?.model, 'rt-one');
    const own = resolveAgent(config, { realtime: { ...RT, model: 'rt-own', voice: 'cedar' } });
    assert.equal(own.realtime?.model, 'rt-own');
    assert.equal(own.realtime?.voice, 'cedar');
    assert.equal(resolveAgent(config, { pipeline: 'cascade' }).realtime, undefined);
    const cascade = ConfigSchema.parse({});
    assert.equal(resolveAgent(cascade, { realtime: RT }).realtime, undefined, 'a block alone does not switch');
    assert.equal(resolveAgent(cascade, { pipeline: 'realtime', realtime: RT }).realtime?.model, 'rt-one');
    assert.throws(() => resolveAgent(cascade, { pipeline: 'realtime' }), /needs a realtime block/);
  });
});

describe('realtime agent profiles', () => {
  const base = {
    asr: { name: 'base', transcribe: async () => '', close: async () => {} } satisfies Asr,
    tts: { name: 'espeak', synthesis: 'media-worker', voice: { voice: 'en-us' }, close: async () => {} } satisfies Tts,
  };

  function setup(raw: Record<string, unknown>, opts: { log?: typeof silentLogger; failing?: string } = {}) {
    const config: Config = ConfigSchema.parse(raw);
    const lookup = configAgentLookup(config);
    const made: string[] = [];
    const closed: string[] = [];
    const secrets: string[] = [];
    const profiles = new AgentProfiles({
      config,
      lookup,
      log: opts.log ?? silentLogger,
      base,
      clients: {
        llmFor: (o) => ({ model: o.model, stream: () => (async function* () {})() }),
        asrFor: () => base.asr,
      },
      onSecret: (v) => secrets.push(v),
      createRealtime: (o: RealtimeOptions): RealtimeModel => {
        if (o.model === opts.failing) throw new Error('no CA file at /nowhere.pem');
        made.push(o.model);
        const model: RealtimeModel & { close(): void } = {
          provider: o.provider,
          inputRate: 24_000,
          outputRate: 24_000,
          open: async () => {
            throw new Error('not in this test');
          },
          close: () => {
            closed.push(o.model);
          },
        };
        return model;
      },
    });
    return { lookup, profiles, made, closed, secrets };
  }

  test('a realtime agent has the model; a cascade one none; one model per distinct options, shared', () => {
    const { profiles, made, secrets } = setup({
      agents: [
        { name: 'a', pipeline: 'realtime', realtime: { ...RT, apiKey: 'sk-realtime-agent-key' }, devices: ['d1'] },
        { name: 'b', pipeline: 'realtime', realtime: { ...RT, apiKey: 'sk-realtime-agent-key' }, devices: ['d2'] },
        { name: 'c', realtime: RT, devices: ['d3'] },
      ],
    });
    const a = profiles.profileFor('d1').profile;
    const b = profiles.profileFor('d2').profile;
    assert.equal(a.realtime?.provider, 'openai-realtime');
    assert.equal(a.realtime, b.realtime, 'the same options share one model');
    assert.equal(profiles.profileFor('d3').profile.realtime, undefined, 'no pipeline: the cascade');
    assert.deepEqual(made, ['rt-one']);
    assert.ok(secrets.includes('sk-realtime-agent-key'), 'the key is redacted by value');
  });

  test("the configuration's pipeline is the default agent's", () => {
    const { profiles } = setup({ pipeline: 'realtime', realtime: RT });
    const p = profiles.profileFor('dx').profile;
    assert.equal(p.agent, CONFIG_AGENT);
    assert.ok(p.realtime);
  });

  test('an edit applies from the next profile; the old model is closed once no turn holds it', async () => {
    const { profiles, lookup, made, closed } = setup({
      agents: [{ name: 'a', pipeline: 'realtime', realtime: RT, devices: ['d1'] }],
    });
    const held = profiles.profileFor('d1');
    lookup.setAgent('a', { pipeline: 'realtime', realtime: { ...RT, model: 'rt-two' } });
    const next = profiles.profileFor('d1');
    assert.notEqual(next.profile.realtime, held.profile.realtime);
    assert.deepEqual(made, ['rt-one', 'rt-two']);
    assert.deepEqual(closed, [], 'a turn still holds the old profile');
    held.release();
    assert.deepEqual(closed, ['rt-one']);
    // Back to the cascade: no model, and the last one closes with its last turn.
    lookup.setAgent('a', { pipeline: 'cascade', realtime: { ...RT, model: 'rt-two' } });
    assert.equal(profiles.profileFor('d1').profile.realtime, undefined);
    next.release();
    assert.deepEqual(closed, ['rt-one', 'rt-two']);
    await profiles.close();
  });

  test('profiles closing close the models still in use', async () => {
    const { profiles, closed } = setup({ pipeline: 'realtime', realtime: RT });
    profiles.profileFor('dx');
    await profiles.close();
    assert.deepEqual(closed, ['rt-one']);
  });

  test('a model that cannot be made, or a stored realtime pipeline without a block: the cascade, said once', () => {
    const logs = createLogSink();
    const log = createLogger({ level: 'info', logContent: false, destination: logs.stream });
    const { profiles, lookup } = setup(
      { agents: [{ name: 'a', pipeline: 'realtime', realtime: { ...RT, model: 'broken' }, devices: ['d1', 'd2'] }] },
      { log, failing: 'broken' },
    );
    assert.equal(profiles.profileFor('d1').profile.realtime, undefined);
    assert.equal(profiles.profileFor('d2').profile.realtime, undefined);
    const lines = logs.lines.filter((l) => /realtime model could not be made/.test(String(l.msg)));
    assert.equal(lines.length, 1);
    assert.equal(lines[0]?.agent, 'a');
    // A row written before the configuration lost its realtime block.
    lookup.setAgent('a', { pipeline: 'realtime', systemPrompt: 'Own.' });
    const p = profiles.profileFor('d1').profile;
    assert.equal(p.realtime, undefined);
    assert.ok(logs.lines.some((l) => /not valid/.test(String(l.msg)) && /needs a realtime block/.test(String(l.err))));
  });
});
