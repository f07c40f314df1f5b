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
  /**
   * `stream`: the streaming helper (`build/pocketsphinx-stream`, built by `scripts/setup.sh` and in the image) decodes each utterance while it is spoken, with partial transcripts. `continuous`: one `pocketsphinx_continuous` process decodes each utterance once it has ended, no partials. `auto`: `stream` when the helper is built.
   */
  engine: z.enum(['auto', 'stream', 'continuous']).default('auto'),
  /** `stream` engine: utterances decoded at once (each a process of its own, ~20 MB with the language model); more wait their turn, their audio kept. */
  maxStreams: z.number().int().min(1).max(256).default(8),
  /** `stream` engine: longest wait for a streamed utterance's final transcript after its end, in ms. */
  finalTimeoutMs: z.number().int().positive().default(3000),
  /** `continuous` engine: the recogniser's executable. */
  command: z.string().min(1).default('pocketsphinx_continuous'),
  /** Longest wait for one whole utterance's result (`transcribe`), in ms; unset: 3000 + twice the utterance's duration. */
  timeoutMs: z.number().int().positive().optional(),
});
export type PocketsphinxAsrOptions = z.infer<typeof PocketsphinxAsrSchema>;
