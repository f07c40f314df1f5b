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
