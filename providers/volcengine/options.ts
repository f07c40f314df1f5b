/**
 * @module The options of Volcengine's (Doubao's) big-model streaming recogniser, the "sauc"
 * WebSocket protocol (`asr` with `provider: volcengine`). The defaults are the vendor's documented
 * ones; only the two credentials must be given.
 */
import { z } from 'zod';

/**
 * The optimised bidirectional endpoint: it answers only when the hypothesis changes, which is what
 * the partials need, and the vendor documents it with lower first- and last-word latency than
 * `bigmodel` (one answer per packet). `bigmodel_nostream` answers only at the end of audio.
 */
export const VOLCENGINE_DEFAULT_URL = 'wss://openspeech.bytedance.com/api/v3/sauc/bigmodel_async';

/** The only endpoint that takes an `audio.language`; elsewhere the model covers Mandarin, English and dialects. */
const LANGUAGE_ENDPOINT = /\/bigmodel_nostream\/?$/;

export const VolcengineAsrSchema = z
  .strictObject({
    provider: z.literal('volcengine'),
    /** The sauc WebSocket endpoint (`…/bigmodel_async`, `…/bigmodel`, `…/bigmodel_nostream`). */
    url: z.url({ protocol: /^wss?$/, error: 'asr.url must be a ws:// or wss:// URL' }).default(VOLCENGINE_DEFAULT_URL),
    /** The console's APP ID, sent as `X-Api-App-Key`. */
    appKey: z.string().min(1),
    /** The console's Access Token, sent as `X-Api-Access-Key`. */
    accessKey: z.string().min(1),
    /**
     * `X-Api-Resource-Id`: the model and its billing. `volc.bigasr.sauc.duration` or
     * `volc.bigasr.sauc.concurrent` (model 1.0), `volc.seedasr.sauc.duration` or
     * `volc.seedasr.sauc.concurrent` (model 2.0).
     */
    resourceId: z.string().min(1).default('volc.bigasr.sauc.duration'),
    /** e.g. `en-US`, `ja-JP`; only `bigmodel_nostream` takes it. Unset: Mandarin, English and dialects. */
    language: z.string().min(1).optional(),
    /** Inverse text normalisation: numbers, dates and units written as digits. */
    enableItn: z.boolean().default(true),
    /** Punctuation in the text. */
    enablePunc: z.boolean().default(true),
    /** Audio per packet sent, in ms (the vendor recommends 100–200, 200 for the bidirectional endpoints). */
    packetMs: z.number().int().min(20).max(1000).default(200),
    /** Longest wait from opening a stream to the vendor's answer to its request, in ms. */
    connectTimeoutMs: z.number().int().positive().default(5000),
    /** Longest wait for the final transcript once the utterance has ended, in ms. */
    finalTimeoutMs: z.number().int().positive().default(3000),
  })
  .refine((o) => o.language === undefined || LANGUAGE_ENDPOINT.test(new URL(o.url).pathname), {
    path: ['language'],
    message: 'asr.language works only with the bigmodel_nostream endpoint (set asr.url to it, or remove asr.language)',
  });
export type VolcengineAsrOptions = z.infer<typeof VolcengineAsrSchema>;
