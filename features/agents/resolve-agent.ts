/**
 * @module An agent's settings over the server's configuration: what a turn of a device on that
 * agent uses. What the agent leaves unset comes from the configuration; an agent whose `language`
 * differs from the configuration's takes that language's presets (system prompt, spoken texts, ASR
 * hint, embedded voice) for what it leaves unset, as `features/agents/language.ts` does for the
 * configuration itself. Pure: no clients are built here.
 */
import {
  AsrSchema,
  asrTakesLanguageHint,
  type RealtimeOptions,
  TtsSchema,
  ttsProvider,
  type AsrOptions,
  type TtsOptions,
} from '../../providers/index.ts';
import { pickLlmOptions, type OpenAiLlmOptions } from '../../providers/openai/options.ts';
import { LANGUAGE_PACKS, type Language } from './language.ts';
import { AgentSettingsSchema, realtimeBlockMissing, type AgentSettings, type Pipeline } from './agent-settings.ts';

/** Everything a turn needs from its agent, every field decided. */
export interface ResolvedAgent {
  systemPrompt: string;
  greeting: string;
  apology: string;
  apologies: { llm: string; asr: string; tts: string };
  llm: OpenAiLlmOptions;
  asr: AsrOptions;
  tts: TtsOptions;
  /** Unset lists allow all of their kind. */
  tools: { mcpServers?: string[]; local?: string[] };
  /** IANA zone: the agent's, else `tools.timeZone`; unset: the server's offset or zone. */
  timeZone?: string;
  /** The speech-to-speech model's options: set only when the pipeline is `realtime`. */
  realtime?: RealtimeOptions;
}

/**
 * What an agent leaves unset comes from: the server's configuration, which is the default agent
 * (server/config.ts's `Config` is one; stated here so that this room does not import the root).
 */
export interface AgentDefaults {
  language: Language;
  conversation: { greeting: string; apology: string; apologies: { llm: string; asr: string; tts: string } };
  llm: OpenAiLlmOptions & { systemPrompt: string };
  asr: AsrOptions;
  tts: TtsOptions;
  tools: { timeZone: string };
  /** The default agent's pipeline; absent: `cascade`. */
  pipeline?: Pipeline | undefined;
  /** The default realtime model block, for agents whose pipeline is `realtime` without one of their own. */
  realtime?: RealtimeOptions | undefined;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The agent's stored or configured settings, checked; a reason when they are not valid. */
export function parseAgentSettings(
  raw: unknown,
  defaults?: Pick<AgentDefaults, 'pipeline' | 'realtime'>,
): { ok: true; settings: AgentSettings } | { ok: false; error: string } {
  const parsed = AgentSettingsSchema.safeParse(raw);
  if (parsed.success) {
    // An agent's own unset pipeline is the configuration's, which the configuration's schema checked.
    const missing = defaults ? realtimeBlockMissing(parsed.data, defaults.realtime !== undefined) : null;
    return missing === null ? { ok: true, settings: parsed.data } : { ok: false, error: `realtime: ${missing}` };
  }
  return {
    ok: false,
    error: parsed.error.issues.map((i) => `${i.path.join('.') || '(settings)'}: ${i.message}`).join('; '),
  };
}

/**
 * `raw`: the agent's settings as written (the configuration's entry without `name`/`devices`, or a
 * stored row's JSON), so that "left unset" means unset, not a schema default.
 */
export function resolveAgent(config: AgentDefaults, raw: Record<string, unknown>): ResolvedAgent {
  const parsed = parseAgentSettings(raw, config);
  if (!parsed.ok) throw new Error(`invalid agent settings: ${parsed.error}`);
  const s = parsed.settings;
  // The language's presets apply only when the agent speaks another language than the
  // configuration (whose own texts already follow its language, with the operator's edits).
  const pack = s.language !== undefined && s.language !== config.language ? LANGUAGE_PACKS[s.language] : undefined;
  const conv = config.conversation;

  const llm: OpenAiLlmOptions = { ...pickLlmOptions(config.llm) };
  if (s.llm?.baseURL !== undefined) llm.baseURL = s.llm.baseURL;
  if (s.llm?.model !== undefined) llm.model = s.llm.model;
  if (s.llm?.apiKey !== undefined) llm.apiKey = s.llm.apiKey;
  if (s.llm?.temperature !== undefined) llm.temperature = s.llm.temperature;

  const rawAsr = isObj(raw.asr) ? raw.asr : undefined;
  let asr: AsrOptions = rawAsr ? AsrSchema.parse(rawAsr) : config.asr;
  // The hint follows the agent's language unless the agent wrote one.
  if (pack && asrTakesLanguageHint(asr.provider) && rawAsr?.language === undefined)
    asr = AsrSchema.parse({ ...asr, language: pack.asrLanguage });

  const rawTts = isObj(raw.tts) ? raw.tts : undefined;
  let tts: TtsOptions = rawTts ? TtsSchema.parse(rawTts) : config.tts;
  // The voice follows the agent's language, for a provider whose voice depends on it.
  const forLanguage = ttsProvider(tts).forLanguage;
  if (pack && s.language !== undefined && forLanguage) tts = forLanguage(tts, s.language, rawTts);

  const pipeline = s.pipeline ?? config.pipeline ?? 'cascade';
  // A whole block, as `tts`: the agent's own, else the configuration's.
  const realtime = pipeline === 'realtime' ? (s.realtime ?? config.realtime) : undefined;

  return {
    systemPrompt: s.systemPrompt ?? pack?.systemPrompt ?? config.llm.systemPrompt,
    greeting: s.greeting ?? pack?.conversation.greeting ?? conv.greeting,
    apology: pack?.conversation.apology ?? conv.apology,
    apologies: { ...(pack?.conversation.apologies ?? conv.apologies) },
    llm,
    asr,
    tts,
    tools: {
      ...(s.tools?.mcpServers ? { mcpServers: [...s.tools.mcpServers] } : {}),
      ...(s.tools?.local ? { local: [...s.tools.local] } : {}),
    },
    ...(s.timeZone !== undefined || config.tools.timeZone !== ''
      ? { timeZone: s.timeZone ?? config.tools.timeZone }
      : {}),
    ...(realtime ? { realtime } : {}),
  };
}
