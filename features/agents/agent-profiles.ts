/**
 * @module Each device's assistant, ready for a turn: the device's agent (through `AgentLookup`)
 * resolved over the configuration (`resolve-agent.ts`) into the prompt, texts and clients a turn
 * uses. A profile is built once per distinct settings and shared by every device of its agent;
 * when the agent changes the next turn gets a new one, and the old one's clients are closed once
 * no turn holds it.
 *
 * Clients: the LLM and an HTTP ASR are served by the provider thread, one client per distinct
 * options (`ProviderThread.llmFor`/`asrFor`); settings equal to the configuration's share its
 * clients. A remote TTS runs on the main thread, one per distinct options, made in the background
 * as soon as an agent is known or changes (until it is ready, turns speak with the configured
 * TTS); an embedded voice is a voice name the media workers speak with per request. The embedded
 * recogniser (pocketsphinx) is one process for the server: an agent cannot have its own.
 */
import { toVoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import { stableKey } from '../../core/stable-key.ts';
import type { Asr } from '../../audio/asr/asr.ts';
import type { Tts } from '../../audio/tts/tts.ts';
import type { LlmClient } from '../../llm/types.ts';
import type { RealtimeModel } from '../../llm/realtime.ts';
import {
  asrProvider,
  createRealtimeModel,
  createTts,
  ttsProvider,
  type AsrOptions,
  type RealtimeOptions,
  type TtsOptions,
} from '../../providers/index.ts';
import type { OpenAiLlmOptions } from '../../providers/openai/options.ts';
import type { HeldProfile, TurnProfile } from '../../voice/conversation/turn-profile.ts';
import { configSecrets } from '../../core/config-secrets.ts';
import { languageWarnings } from './language.ts';
import type { AgentRow } from '../../store/types.ts';
import type { AgentLookup } from './agent-lookup.ts';
import { parseAgentSettings, resolveAgent, type AgentDefaults, type ResolvedAgent } from './resolve-agent.ts';

/** The name of the agent that is the configuration itself (no `agents:` declared, or a missing one). */
export const CONFIG_AGENT = 'default';

export interface AgentClients {
  llmFor(options: OpenAiLlmOptions): LlmClient;
  asrFor(options: AsrOptions): Asr;
}

export interface AgentProfilesOptions {
  /** The configuration: every agent's defaults, and which agent a device without one uses. */
  config: AgentDefaults & { defaultAgent?: string | undefined; agents: readonly { name: string }[] };
  lookup: AgentLookup;
  log: Logger;
  /** The configuration's own providers: shared by every agent whose settings are the same. */
  base: { asr: Asr; tts: Tts };
  /** The provider thread's clients per options. */
  clients: AgentClients;
  /** Registers an agent's secrets (API keys) for log redaction by value. */
  onSecret?: (value: string) => void;
  /** Makes a TTS for options (default: the provider map's). */
  createTts?: (options: TtsOptions, log: Logger) => Promise<Tts>;
  /** Makes a realtime model for options (default: the provider map's). */
  createRealtime?: (options: RealtimeOptions, log: Logger) => RealtimeModel;
}

/** One agent's profile as built from one version of its settings. */
interface Built {
  name: string;
  /** The settings it was built from (`stableKey`), and the row they were read from. */
  key: string;
  row: AgentRow | undefined;
  updatedAt: string | undefined;
  profile: TurnProfile;
  /** The shared remote TTS it counts as a user of (none for the configured or an embedded voice). */
  tts: { key: string; entry: TtsEntry } | undefined;
  /** The shared realtime model it counts as a user of (a `realtime` pipeline only). */
  realtime: { key: string; entry: RealtimeEntry } | undefined;
  /** Turns holding it. */
  refs: number;
  /** False once the agent changed or went away: disposed when no turn holds it. */
  current: boolean;
  disposed: boolean;
}

/** A realtime model shared by the profiles whose options are the same. */
interface RealtimeEntry {
  model: RealtimeModel;
  users: number;
}

/** Closes a model that holds something of its own (`RealtimeModel.close` is optional). */
function closeModel(model: RealtimeModel): void {
  void Promise.resolve(model.close?.()).catch(() => undefined);
}

/** A remote TTS shared by the profiles whose options are the same. */
interface TtsEntry {
  tts: Tts | undefined;
  users: number;
  making: Promise<void> | undefined;
}

export class AgentProfiles {
  readonly #o: AgentProfilesOptions;
  readonly #log: Logger;
  readonly #built = new Map<string, Built>();
  readonly #tts = new Map<string, TtsEntry>();
  readonly #realtime = new Map<string, RealtimeEntry>();
  readonly #builds = new Map<string, number>();
  readonly #baseTtsKey: string;
  readonly #baseAsrKey: string;
  /** Problems already logged (one line each, not one per turn). */
  readonly #warned = new Set<string>();
  readonly #unsubscribe: () => void;
  #closed = false;

  constructor(opts: AgentProfilesOptions) {
    this.#o = opts;
    this.#log = opts.log.child({ part: 'agents' });
    this.#baseTtsKey = stableKey(opts.config.tts);
    this.#baseAsrKey = stableKey(opts.config.asr);
    this.#unsubscribe = opts.lookup.onChange((change) => {
      if (change.kind === 'agent') this.#refresh(change.name);
    });
    for (const row of opts.lookup.agents()) this.#refresh(row.name);
  }

  /** The agent a device without one uses. */
  defaultAgent(): string {
    const { config } = this.#o;
    return config.defaultAgent ?? config.agents[0]?.name ?? CONFIG_AGENT;
  }

  /** The device's assistant as it is now, held until `release`. */
  profileFor(deviceId: string | null): HeldProfile {
    const named = deviceId !== null ? this.#o.lookup.agentNameOf(deviceId) : null;
    // An agent deleted a moment ago (another replica's change not seen yet): the default agent.
    const name = named !== null && this.#o.lookup.agent(named) !== undefined ? named : this.defaultAgent();
    const built = this.#current(name);
    built.refs++;
    let released = false;
    return {
      profile: built.profile,
      release: () => {
        if (released) return;
        released = true;
        built.refs--;
        this.#disposeIfUnused(built);
      },
    };
  }

  /** How many times an agent's profile was built (once per distinct settings). */
  builds(name: string): number {
    return this.#builds.get(name) ?? 0;
  }

  /** Resolves when every remote TTS asked for so far has been made (or failed). */
  async ready(): Promise<void> {
    await Promise.all([...this.#tts.values()].map((e) => e.making));
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#unsubscribe();
    await this.ready();
    const all = [...this.#tts.values()];
    this.#tts.clear();
    this.#built.clear();
    for (const e of this.#realtime.values()) closeModel(e.model);
    this.#realtime.clear();
    await Promise.allSettled(all.map((e) => e.tts?.close()));
  }

  /** Rebuilds an agent's profile if its settings changed (or forgets it if it is gone). */
  #refresh(name: string): void {
    if (this.#closed) return;
    const row = this.#o.lookup.agent(name);
    if (!row) {
      const old = this.#built.get(name);
      if (old) this.#retire(old);
      return;
    }
    this.#current(name);
  }

  /** The agent's current profile, built now if its settings changed; a missing agent is the configuration's. */
  #current(name: string): Built {
    const row = this.#o.lookup.agent(name);
    const agent = row ? name : CONFIG_AGENT;
    const have = this.#built.get(agent);
    // The same row, not updated since: unchanged, without serialising its settings again.
    if (have && row !== undefined && have.row === row && have.updatedAt === row.updatedAt) return have;
    const raw = row?.settings ?? {};
    const key = stableKey(raw);
    if (have && have.key === key) {
      have.row = row;
      have.updatedAt = row?.updatedAt;
      return have;
    }
    if (!row && name !== CONFIG_AGENT)
      this.#warnOnce(`missing:${name}`, { agent: name }, 'agent not found; using the configuration');
    const built = this.#build(agent, key, raw, row);
    if (have) this.#retire(have);
    this.#built.set(agent, built);
    return built;
  }

  #build(name: string, key: string, raw: Record<string, unknown>, row: AgentRow | undefined): Built {
    const { config } = this.#o;
    for (const s of configSecrets(raw)) this.#o.onSecret?.(s.value);
    let resolved: ResolvedAgent;
    const checked = parseAgentSettings(raw, config);
    if (checked.ok) {
      resolved = resolveAgent(config, raw);
    } else {
      this.#warnOnce(
        `invalid:${name}:${key}`,
        { agent: name, err: checked.error },
        'agent settings are not valid; using the configuration',
      );
      resolved = resolveAgent(config, {});
    }
    const language = checked.ok ? checked.settings.language : undefined;
    // Said once for the configuration at start; for an agent that speaks another language, once here.
    if (language !== undefined && language !== config.language) {
      for (const w of languageWarnings({ language, asr: resolved.asr }))
        this.#warnOnce(`lang:${name}:${w.key}`, { agent: name, key: w.key }, w.message);
    }
    const { voice: tts, uses } = this.#useTts(stableKey(resolved.tts), resolved.tts);
    const realtime = resolved.realtime ? this.#useRealtime(name, resolved.realtime) : undefined;
    const profile: TurnProfile = {
      agent: name,
      systemPrompt: resolved.systemPrompt,
      greeting: resolved.greeting,
      apology: resolved.apology,
      apologies: resolved.apologies,
      llm: this.#o.clients.llmFor(resolved.llm),
      asr: this.#asr(name, resolved.asr),
      // Read at each turn's start: a remote TTS made in the background speaks once it is ready.
      get tts() {
        return tts();
      },
      ...(resolved.tools.mcpServers || resolved.tools.local ? { tools: resolved.tools } : {}),
      memory: (checked.ok ? checked.settings.memory : undefined) ?? 'summary',
      ...(resolved.timeZone !== undefined ? { timeZone: resolved.timeZone } : {}),
      ...(realtime ? { realtime: realtime.entry.model } : {}),
    };
    this.#builds.set(name, (this.#builds.get(name) ?? 0) + 1);
    this.#log.info(
      {
        agent: name,
        pipeline: realtime ? 'realtime' : 'cascade',
        model: resolved.realtime?.model ?? resolved.llm.model,
        tts: resolved.tts.provider,
      },
      'agent ready',
    );
    return {
      name,
      key,
      row,
      updatedAt: row?.updatedAt,
      profile,
      tts: uses,
      realtime,
      refs: 0,
      current: true,
      disposed: false,
    };
  }

  #asr(name: string, options: AsrOptions): Asr {
    if (stableKey(options) === this.#baseAsrKey) return this.#o.base.asr;
    const provider = asrProvider(options);
    if (provider.perAgent) {
      try {
        return provider.perAgent(options, this.#log.child({ part: 'asr', agent: name }));
      } catch (err) {
        this.#warnOnce(
          `asr:${name}`,
          { agent: name, provider: options.provider, err: toVoiceError(err).message },
          "the agent's ASR could not be made: the agent uses the configured ASR",
        );
        return this.#o.base.asr;
      }
    }
    if (provider.runsIn === 'provider-thread') return this.#o.clients.asrFor(options);
    this.#warnOnce(
      `asr:${name}`,
      { agent: name, provider: options.provider },
      'this ASR runs as one process for the whole server: the agent uses the configured ASR',
    );
    return this.#o.base.asr;
  }

  /**
   * The TTS for these options, counted as used by one more profile. The configured one and an
   * embedded voice are at hand; a remote one is made in the background, and until then the
   * configured TTS speaks (the agent's voice from the turn after).
   */
  #useTts(key: string, options: TtsOptions): { voice: () => Tts; uses: { key: string; entry: TtsEntry } | undefined } {
    const base = this.#o.base.tts;
    if (key === this.#baseTtsKey) return { voice: () => base, uses: undefined };
    const embedded = ttsProvider(options).embedded;
    if (embedded) {
      const voice = embedded(options);
      return { voice: () => voice, uses: undefined };
    }
    let entry = this.#tts.get(key);
    if (!entry) {
      const made: TtsEntry = { tts: undefined, users: 0, making: undefined };
      const create = this.#o.createTts ?? createTts;
      made.making = create(options, this.#log.child({ part: 'tts' })).then(
        (tts) => {
          made.making = undefined;
          // Nobody wants it any more (the agent changed again meanwhile).
          if (made.users === 0 || this.#tts.get(key) !== made) void tts.close();
          else made.tts = tts;
        },
        (err: unknown) => {
          made.making = undefined;
          if (this.#tts.get(key) === made) this.#tts.delete(key);
          this.#log.error(
            { err: err instanceof Error ? err.message : String(err) },
            'agent TTS could not be made; the configured TTS speaks',
          );
        },
      );
      this.#tts.set(key, made);
      entry = made;
    }
    entry.users++;
    const shared = entry;
    return { voice: () => shared.tts ?? base, uses: { key, entry: shared } };
  }

  /**
   * The realtime model for these options, counted as used by one more profile: made once per
   * distinct options (it opens nothing until a session asks) and closed when no profile uses it.
   * One that cannot be made leaves the agent on the cascade, said once.
   */
  #useRealtime(name: string, options: RealtimeOptions): { key: string; entry: RealtimeEntry } | undefined {
    const key = stableKey(options);
    let entry = this.#realtime.get(key);
    if (!entry) {
      const create = this.#o.createRealtime ?? createRealtimeModel;
      try {
        entry = { model: create(options, this.#log.child({ part: 'realtime' })), users: 0 };
      } catch (err) {
        this.#warnOnce(
          `realtime:${name}:${key}`,
          { agent: name, err: toVoiceError(err).message },
          "the agent's realtime model could not be made: the agent talks through the cascade",
        );
        return undefined;
      }
      this.#realtime.set(key, entry);
    }
    entry.users++;
    return { key, entry };
  }

  #retire(built: Built): void {
    built.current = false;
    if (this.#built.get(built.name) === built) this.#built.delete(built.name);
    this.#disposeIfUnused(built);
  }

  #disposeIfUnused(built: Built): void {
    if (built.current || built.refs > 0 || built.disposed) return;
    built.disposed = true;
    if (built.realtime) {
      const { key, entry } = built.realtime;
      entry.users--;
      if (entry.users === 0) {
        if (this.#realtime.get(key) === entry) this.#realtime.delete(key);
        closeModel(entry.model);
      }
    }
    // Its own entry, not whatever the key maps to now: an entry whose voice could not be made was
    // dropped from the map, and another profile's new entry may hold the key since.
    if (!built.tts) return;
    const { key, entry } = built.tts;
    entry.users--;
    if (entry.users > 0) return;
    if (this.#tts.get(key) === entry) this.#tts.delete(key);
    // Still being made: its completion sees nobody wants it and closes it.
    void entry.tts?.close();
  }

  #warnOnce(key: string, fields: Record<string, unknown>, msg: string): void {
    if (this.#warned.has(key)) return;
    this.#warned.add(key);
    this.#log.warn(fields, msg);
  }
}
