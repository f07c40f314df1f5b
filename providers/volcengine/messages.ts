/**
 * @module The JSON inside sauc frames: the request that opens a recognition (built from the
 * options) and the server's responses, validated with zod before anything reads them.
 */
import { z } from 'zod';
import type { VolcengineAsrOptions } from './options.ts';

/** The only rate the vendor takes; other uplink rates are resampled to it. */
export const SAUC_SAMPLE_RATE = 16_000;

/** The full client request: raw s16le mono PCM at 16 kHz, cumulative results. */
export function saucRequest(o: VolcengineAsrOptions): object {
  return {
    user: { uid: 'xiaozhi-ts-server' },
    audio: {
      format: 'pcm',
      codec: 'raw',
      rate: SAUC_SAMPLE_RATE,
      bits: 16,
      channel: 1,
      ...(o.language !== undefined ? { language: o.language } : {}),
    },
    request: {
      model_name: 'bigmodel',
      enable_itn: o.enableItn,
      enable_punc: o.enablePunc,
      // `full`: every response carries the whole utterance's text so far, which is what a partial is.
      result_type: 'full',
    },
  };
}

/**
 * A full server response: only `result.text` is read. The init reply and the audio-duration-only
 * replies have no text; `result.utterances` (present with `show_utterances`) is not asked for.
 */
export const SaucResponseSchema = z.object({
  audio_info: z.object({ duration: z.number() }).optional(),
  result: z
    .object({
      text: z.string().optional(),
    })
    .optional(),
});
export type SaucResponse = z.infer<typeof SaucResponseSchema>;
