/**
 * What each turn's start asks of the agent layer: the device's profile (`AgentProfiles.profileFor`,
 * built once per distinct agent settings and kept until the change feed says the agent changed)
 * and its release. Printed: µs per turn start with two agents, and per rebuild after a change.
 */
import { silentLogger } from '../../core/logger.ts';
import type { Asr } from '../../audio/asr/asr.ts';
import type { Tts } from '../../audio/tts/tts.ts';
import type { LlmClient } from '../../llm/types.ts';
import { AgentProfiles } from '../../features/agents/agent-profiles.ts';
import { configAgentLookup } from '../../features/agents/agent-lookup.ts';
import { ConfigSchema } from '../../server/config.ts';

export async function run(): Promise<void> {
  const config = ConfigSchema.parse({
    agents: [
      { name: 'home', devices: ['a0:00:00:00:00:01'], systemPrompt: 'You are at home.' },
      { name: 'teacher', systemPrompt: 'You teach.' },
    ],
    defaultAgent: 'teacher',
  });
  const lookup = configAgentLookup(config);
  const base = {
    asr: { name: 'base', transcribe: async () => '', close: async () => {} } satisfies Asr,
    tts: { name: 'espeak', synthesis: 'media-worker', voice: { voice: 'en-us' }, close: async () => {} } satisfies Tts,
  };
  const clients = {
    llmFor: (o: { model: string }): LlmClient => ({ model: o.model, stream: () => (async function* () {})() }),
    asrFor: (): Asr => base.asr,
  };
  const profiles = new AgentProfiles({ config, lookup, log: silentLogger, base, clients });
  const n = 200_000;
  for (let i = 0; i < n / 10; i++) profiles.profileFor('a0:00:00:00:00:01').release();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) profiles.profileFor(i % 2 ? 'a0:00:00:00:00:01' : 'a0:00:00:00:00:02').release();
  const us = ((performance.now() - t0) * 1000) / n;
  console.log(
    `turn start: the device's agent profile ${us.toFixed(2)} µs (built ${profiles.builds('home')} time(s) for ${n} turns)`,
  );
  await profiles.close();
}
