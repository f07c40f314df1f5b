/**
 * @module The embedded recogniser's options (`asr` with `provider: pocketsphinx`; Debian
 * `pocketsphinx` + `pocketsphinx-en-us`).
 */
import { z } from 'zod';

export const PocketsphinxAsrSchema = z.strictObject({
  provider: z.literal('pocketsphinx'),
  /** JSGF grammar that constrains recognition to commands: the grammar text itself (starting with `#JSGF`) or a path to a .gram file. */
  grammar: z.string().min(1).optional(),
  /** Acoustic model directory (default: the installed en-us model). */
  hmm: z.string().min(1).optional(),
  /** Pronunciation dictionary file (default: the installed en-us one). */
  dict: z.string().min(1).optional(),
  /** Language model file (default: the installed en-us one); unused with a `grammar`. */
  lm: z.string().min(1).optional(),
  /** The recogniser's executable. */
  command: z.string().min(1).default('pocketsphinx_continuous'),
  /** Longest wait for one utterance's result, in ms; unset: 3000 + twice the utterance's duration. */
  timeoutMs: z.number().int().positive().optional(),
});
export type PocketsphinxAsrOptions = z.infer<typeof PocketsphinxAsrSchema>;
