/**
 * @module The embedded TTS's options (`tts` with `provider: espeak`): the voice the media workers'
 * espeak-ng engine speaks with.
 */
import { z } from 'zod';

export const EspeakTtsSchema = z.strictObject({
  provider: z.literal('espeak'),
  /** espeak-ng voice: `en-us`, `en-gb`, `cmn-latn-pinyin` for Mandarin (plain `cmn` reads pinyin as English), variants like `en-us+f3`. */
  voice: z.string().min(1).default('en-us'),
  /** Words per minute. */
  speed: z.number().int().min(80).max(450).default(175),
  /** Pitch, 0–99. */
  pitch: z.number().int().min(0).max(99).default(50),
});
export type EspeakTtsOptions = z.infer<typeof EspeakTtsSchema>;

/** The voice the schema fills in when none is written. */
const ESPEAK_DEFAULT_VOICE = EspeakTtsSchema.parse({ provider: 'espeak' }).voice;

/** The voice for each language the server speaks (`language`). */
export const ESPEAK_LANGUAGE_VOICES = { en: 'en-us', zh: 'cmn-latn-pinyin' } as const;

/**
 * The options for an agent that speaks `language`: that language's voice, unless the agent wrote
 * one of its own. The schema's default counts as unwritten: settings that went through the schema
 * once (the configuration's `agents:`, a body the admin API validated) carry it.
 */
export function espeakForLanguage(
  options: EspeakTtsOptions,
  language: string,
  written: Readonly<Record<string, unknown>> | undefined,
): EspeakTtsOptions {
  const voice = (ESPEAK_LANGUAGE_VOICES as Readonly<Record<string, string>>)[language];
  if (voice === undefined || (written?.voice !== undefined && written.voice !== ESPEAK_DEFAULT_VOICE)) return options;
  return { ...options, voice };
}
