/**
 * @module The provider map: every ASR and TTS provider by the name the configuration gives it,
 * with its options schema, its factory and what it declares about where it runs. server/deps.ts
 * and the provider thread build providers only through here; nothing else switches on a name.
 * The LLM has one client, any OpenAI-compatible endpoint (`openai/llm.ts`).
 */
import { z } from 'zod';
import type { Asr } from '../../audio/asr/asr.ts';
import type { Tts } from '../../audio/tts/tts.ts';
import type { Logger } from '../../core/logger.ts';
import { EspeakTtsSchema, espeakForLanguage } from '../espeak/options.ts';
import { createEspeakTts } from '../espeak/tts.ts';
import { OpenAiAsrSchema, OpenAiTtsSchema } from '../openai/options.ts';
import { PocketsphinxAsrSchema } from '../pocketsphinx/options.ts';

/** The configuration's `asr` block: one provider's options, chosen by `provider`. */
export const AsrSchema = z.discriminatedUnion('provider', [PocketsphinxAsrSchema, OpenAiAsrSchema]);
export type AsrOptions = z.infer<typeof AsrSchema>;
/** The configuration's `tts` block. */
export const TtsSchema = z.discriminatedUnion('provider', [EspeakTtsSchema, OpenAiTtsSchema]);
export type TtsOptions = z.infer<typeof TtsSchema>;

export interface AsrProvider<O> {
  /**
   * Where its requests run. `provider-thread`: an HTTP client, served by the provider thread
   * (providers/thread/) so its work stays off the main thread. `caller`: in the thread that
   * created it (a child process it owns).
   */
  readonly runsIn: 'provider-thread' | 'caller';
  /** Also the remote endpoint the start-up diagnosis and `/readyz` check, when it has one. */
  endpoint(options: O): { baseURL: string; apiKey: string } | undefined;
  create(options: O, log: Logger): Promise<Asr>;
}

export interface TtsProvider<O> {
  endpoint(options: O): { baseURL: string; apiKey: string } | undefined;
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
};

/** The map's entry for these options (a lookup TypeScript cannot correlate with the options' type by itself). */
export function asrProvider(options: AsrOptions): AsrProvider<AsrOptions> {
  return ASR_PROVIDERS[options.provider] as AsrProvider<AsrOptions>;
}

export function ttsProvider(options: TtsOptions): TtsProvider<TtsOptions> {
  return TTS_PROVIDERS[options.provider] as TtsProvider<TtsOptions>;
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
