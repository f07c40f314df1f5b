/**
 * @module The provider map: every ASR, TTS and realtime (speech-to-speech) provider by the name the configuration gives it,
 * with its options schema, its factory and what it declares about where it runs. server/deps.ts
 * and the provider thread build providers only through here; nothing else switches on a name.
 * The LLM has one client, any OpenAI-compatible endpoint (`openai/llm.ts`).
 */
import { z } from 'zod';
import type { Asr } from '../../audio/asr/asr.ts';
import type { Tts } from '../../audio/tts/tts.ts';
import type { Logger } from '../../core/logger.ts';
import type { RealtimeModel } from '../../llm/realtime.ts';
import { CosyVoiceTtsSchema } from '../dashscope/tts-options.ts';
import { EspeakTtsSchema, espeakForLanguage } from '../espeak/options.ts';
import { createEspeakTts } from '../espeak/tts.ts';
import { FunasrAsr } from '../funasr/asr.ts';
import { FunasrAsrSchema } from '../funasr/options.ts';
import { OpenAiAsrSchema, OpenAiTtsSchema } from '../openai/options.ts';
import { OpenAiRealtimeAsrSchema } from '../openai-realtime/options.ts';
import { PocketsphinxAsrSchema } from '../pocketsphinx/options.ts';
import { OpenAiRealtimeAsr } from '../openai-realtime/asr.ts';
import { OpenAiRealtimeModel } from '../openai-realtime/model.ts';
import { OpenAiRealtimeModelSchema } from '../openai-realtime/realtime-options.ts';
import { VolcengineAsr } from '../volcengine/asr.ts';
import { VolcengineAsrSchema } from '../volcengine/options.ts';
import { VolcengineTtsSchema } from '../volcengine/tts-options.ts';

/** The configuration's `asr` block: one provider's options, chosen by `provider`. */
export const AsrSchema = z.discriminatedUnion('provider', [
  PocketsphinxAsrSchema,
  OpenAiAsrSchema,
  OpenAiRealtimeAsrSchema,
  VolcengineAsrSchema,
  FunasrAsrSchema,
]);
export type AsrOptions = z.infer<typeof AsrSchema>;
/** The configuration's `tts` block. */
export const TtsSchema = z.discriminatedUnion('provider', [
  EspeakTtsSchema,
  OpenAiTtsSchema,
  CosyVoiceTtsSchema,
  VolcengineTtsSchema,
]);
export type TtsOptions = z.infer<typeof TtsSchema>;
/** An agent's `realtime` block: the speech-to-speech model of `pipeline: realtime`, chosen by `provider`. */
export const RealtimeSchema = z.discriminatedUnion('provider', [OpenAiRealtimeModelSchema]);
export type RealtimeOptions = z.infer<typeof RealtimeSchema>;

export interface AsrProvider<O> {
  /**
   * Where its requests run. `provider-thread`: an HTTP client, served by the provider thread
   * (providers/thread/) so its work stays off the main thread. `caller`: in the thread that
   * created it (a child process it owns).
   */
  readonly runsIn: 'provider-thread' | 'caller';
  /**
   * A recogniser that holds nothing between utterances (a vendor WebSocket opened per utterance):
   * made at once, so each agent's profile can have its own. Absent: one for the whole server
   * (a process it owns) or the provider thread's client.
   */
  perAgent?: (options: O, log: Logger) => Asr;
  /** Its options take an ISO-639-1 `language` hint, which follows an agent's language unless written. */
  languageHint?: boolean;
  /** Also the remote endpoint the start-up diagnosis and `/readyz` check, when it has one. */
  endpoint(options: O): { baseURL: string; apiKey: string } | undefined;
  create(options: O, log: Logger): Promise<Asr>;
}

export interface TtsProvider<O> {
  endpoint(options: O): { baseURL: string; apiKey: string } | undefined;
  /**
   * The start-up check of a vendor with no HTTP `/models` (when `endpoint` gives none): reaches it
   * with the key and voice in `options`, sending no text (see `ProviderProbe` in ../doctor.ts).
   */
  probe?: (
    options: O,
    timeoutMs: number,
  ) => Promise<{ problem: 'unreachable' | 'key_refused' | 'model_missing' | 'voice_missing'; detail: string } | null>;
  /** The provider; whether it synthesises in the media worker is its `synthesis`. */
  create(options: O, log: Logger): Promise<Tts>;
  /**
   * An embedded voice: made at once and holding nothing (the media workers speak with it per
   * request), so each agent's profile makes its own, neither shared nor closed. Absent: a remote
   * voice, made in the background and shared by the agents with the same options.
   */
  embedded?: (options: O) => Tts;
  /**
   * The options for an agent that speaks another `language` than the configuration, for a voice
   * that depends on the language; `written` is the agent's own `tts` block as written, if any.
   * Absent: the voice does not follow the language.
   */
  forLanguage?: (options: O, language: string, written: Readonly<Record<string, unknown>> | undefined) => O;
}

export const ASR_PROVIDERS: { [K in AsrOptions['provider']]: AsrProvider<Extract<AsrOptions, { provider: K }>> } = {
  pocketsphinx: {
    runsIn: 'caller',
    endpoint: () => undefined,
    create: async (o, log) => (await import('../pocketsphinx/asr.ts')).createPocketsphinxAsr(o, log),
  },
  openai: {
    runsIn: 'provider-thread',
    endpoint: (o) => ({ baseURL: o.baseURL, apiKey: o.apiKey }),
    create: async (o, log) => new (await import('../openai/asr.ts')).OpenAiAsr(o, log),
    languageHint: true,
  },
  volcengine: {
    // Socket I/O; a WebSocket URL has no `/models` for the start-up check to ask.
    runsIn: 'caller',
    endpoint: () => undefined,
    create: async (o, log) => new VolcengineAsr(o, log),
    perAgent: (o, log) => new VolcengineAsr(o, log),
  },
  'openai-realtime': {
    runsIn: 'caller',
    // The start-up check asks `GET <baseURL>/models` with a Bearer key: Azure's key goes in
    // `api-key`, so it is not checked there; a ws: URL is checked as the http: one it is.
    endpoint: (o) => (o.azure ? undefined : { baseURL: o.baseURL.replace(/^ws(s?):/, 'http$1:'), apiKey: o.apiKey }),
    create: async (o, log) => new OpenAiRealtimeAsr(o, log),
    perAgent: (o, log) => new OpenAiRealtimeAsr(o, log),
    languageHint: true,
  },
  funasr: {
    // A WebSocket per utterance in the main thread (socket I/O, no decoding work of ours). No
    // start-up check: the runtime has no HTTP route to probe, and a connection costs it a decoder.
    runsIn: 'caller',
    endpoint: () => undefined,
    create: (o, log) => FunasrAsr.create(o, log),
    perAgent: (o, log) => FunasrAsr.createNow(o, log),
  },
};

export const TTS_PROVIDERS: { [K in TtsOptions['provider']]: TtsProvider<Extract<TtsOptions, { provider: K }>> } = {
  espeak: {
    endpoint: () => undefined,
    create: async (o) => createEspeakTts(o),
    embedded: (o) => createEspeakTts(o),
    forLanguage: espeakForLanguage,
  },
  openai: {
    endpoint: (o) => ({ baseURL: o.baseURL, apiKey: o.apiKey }),
    create: async (o, log) => new (await import('../openai/tts.ts')).OpenAiTts(o, log),
  },
  cosyvoice: {
    // A WebSocket URL has no `/models` to ask: the start-up check opens a task with the key, model
    // and voice and finishes it with no text (nothing synthesised or billed).
    endpoint: () => undefined,
    probe: async (o, timeoutMs) => (await import('../dashscope/probe.ts')).probeCosyVoice(o, timeoutMs),
    create: async (o, log) => new (await import('../dashscope/tts.ts')).CosyVoiceTts(o, log),
  },
  volcengine: {
    // A WebSocket URL has no `/models`: the start-up check opens a connection and a session with
    // the voice and cancels it before any text, so a wrong key, resource or voice is named at start.
    endpoint: () => undefined,
    probe: async (o, timeoutMs) => (await import('../volcengine/tts-probe.ts')).probeVolcengineTts(o, timeoutMs),
    create: async (o, log) => new (await import('../volcengine/tts.ts')).VolcengineTts(o, log),
  },
};

export interface RealtimeProvider<O> {
  /** The remote endpoint the start-up diagnosis and `/readyz` check (`GET <baseURL>/models`), when it has one. */
  endpoint(options: O): { baseURL: string; apiKey: string } | undefined;
  /** Made at once and holding nothing until a session opens a connection (the CA file is read here). */
  create(options: O, log: Logger): RealtimeModel;
}

export const REALTIME_PROVIDERS: {
  [K in RealtimeOptions['provider']]: RealtimeProvider<Extract<RealtimeOptions, { provider: K }>>;
} = {
  'openai-realtime': {
    // OpenAI answers `GET /models` with a Bearer key (a ws: URL is asked as the http: one it is);
    // Azure's key goes in `api-key` and DashScope's realtime path has no `/models`: not checked.
    endpoint: (o) =>
      o.dialect === 'openai' ? { baseURL: o.baseURL.replace(/^ws(s?):/, 'http$1:'), apiKey: o.apiKey } : undefined,
    create: (o, log) => new OpenAiRealtimeModel(o, log),
  },
};

/** True when the `asr` block names a provider whose `language` is an ISO-639-1 hint. */
export function asrTakesLanguageHint(provider: unknown): boolean {
  return typeof provider === 'string' && Object.hasOwn(ASR_PROVIDERS, provider)
    ? ASR_PROVIDERS[provider as AsrOptions['provider']].languageHint === true
    : false;
}

/** The map's entry for these options (a lookup TypeScript cannot correlate with the options' type by itself). */
export function asrProvider(options: AsrOptions): AsrProvider<AsrOptions> {
  return ASR_PROVIDERS[options.provider] as AsrProvider<AsrOptions>;
}

export function ttsProvider(options: TtsOptions): TtsProvider<TtsOptions> {
  return TTS_PROVIDERS[options.provider] as TtsProvider<TtsOptions>;
}

export function realtimeProvider(options: RealtimeOptions): RealtimeProvider<RealtimeOptions> {
  return REALTIME_PROVIDERS[options.provider] as RealtimeProvider<RealtimeOptions>;
}

/** The speech-to-speech model these (parsed) options name; throws a ConfigInvalid VoiceError when `ca` cannot be read. */
export function createRealtimeModel(options: RealtimeOptions, log: Logger): RealtimeModel {
  return realtimeProvider(options).create(options, log);
}

/** Creates (and for pocketsphinx, starts) the ASR these options name; unset keys take the schema's defaults. */
export function createAsr(options: z.input<typeof AsrSchema>, log: Logger): Promise<Asr> {
  const parsed = AsrSchema.parse(options);
  return asrProvider(parsed).create(parsed, log);
}

/** Creates the TTS these options name; unset keys take the schema's defaults. */
export function createTts(options: z.input<typeof TtsSchema>, log: Logger): Promise<Tts> {
  const parsed = TtsSchema.parse(options);
  return ttsProvider(parsed).create(parsed, log);
}
