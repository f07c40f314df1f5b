/**
 * @module The assistant a device talks to, as one turn sees it: its system prompt, spoken texts,
 * model, recogniser, voice and which tools it may use. The conversation asks for it at the start
 * of every turn (`VoiceDeps.profileFor`), so a change of the device's agent, or of the agent
 * itself, applies from the device's next turn without a reconnect. Where profiles come from (the
 * configuration, a store of agents) is the server's business.
 */
import type { Asr } from '../../audio/asr/asr.ts';
import type { Tts } from '../../audio/tts/tts.ts';
import type { LlmClient } from '../../llm/types.ts';
import type { RealtimeModel } from '../../llm/realtime.ts';
import type { SessionInfo } from '../session/conversation.ts';
import type { VoiceConfig } from './voice-config.ts';
import type { VoiceDeps } from './voice-deps.ts';
import type { MemoryMode } from './session-memory.ts';

/** Which tools a profile may use; an unset list allows all of that kind. */
export interface ToolPolicy {
  /** MCP server names. */
  readonly mcpServers?: readonly string[];
  /** Local tool names. */
  readonly local?: readonly string[];
}

export interface TurnProfile {
  /** The agent's name (logs). */
  readonly agent: string;
  readonly systemPrompt: string;
  readonly greeting: string;
  readonly apology: string;
  readonly apologies: { readonly llm: string; readonly asr: string; readonly tts: string };
  readonly llm: LlmClient;
  readonly asr: Asr;
  readonly tts: Tts;
  readonly tools?: ToolPolicy;
  /** What the device's conversations with this agent leave behind; absent: `summary`. */
  readonly memory?: MemoryMode;
  /** IANA zone of the prompt's date and time; absent: the configuration's. */
  readonly timeZone?: string;
  /**
   * Set when the agent's `pipeline` is `realtime`: the speech-to-speech model that hears the user
   * and speaks the answer in place of `asr`, `llm` and `tts` (which still serve apologies and
   * server push). Absent: the cascade.
   */
  readonly realtime?: RealtimeModel;
}

/** A profile in use by one turn: `release` when the turn has ended (its clients may then be closed). */
export interface HeldProfile {
  readonly profile: TurnProfile;
  release(): void;
}

export type ProfileSource = (info: SessionInfo) => HeldProfile;

/**
 * The configuration as a turn under `p` reads it: the profile's prompt, texts and zone in place of
 * the configuration's (the profile decided them, over the configuration, when it was made).
 */
export function configWithProfile(config: VoiceConfig, p: TurnProfile): VoiceConfig {
  return {
    ...config,
    conversation: { ...config.conversation, greeting: p.greeting, apology: p.apology, apologies: p.apologies },
    llm: { ...config.llm, systemPrompt: p.systemPrompt },
    ...(p.timeZone !== undefined ? { tools: { ...config.tools, timeZone: p.timeZone } } : {}),
  };
}

/**
 * The process's dependencies as one turn sees them under `p`: its providers and texts in place of
 * the configuration's. An embedded voice is its own apology fallback.
 */
export function depsWithProfile(deps: VoiceDeps, p: TurnProfile): VoiceDeps {
  const fallbackTts = p.tts.synthesis === 'media-worker' ? p.tts : deps.fallbackTts;
  return {
    ...deps,
    llm: p.llm,
    asr: p.asr,
    tts: p.tts,
    ...(fallbackTts ? { fallbackTts } : {}),
    config: configWithProfile(deps.config, p),
  };
}
