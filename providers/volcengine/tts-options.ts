/**
 * @module The options of Volcengine's (Doubao's) bidirectional streaming synthesiser (`tts` with
 * `provider: volcengine`): the v3 `/api/v3/tts/bidirection` WebSocket protocol, "双向流式". The
 * voice settings are the vendor's own `req_params` (sent once per answer, in StartSession).
 */
import { z } from 'zod';

export const VOLCENGINE_TTS_DEFAULT_URL = 'wss://openspeech.bytedance.com/api/v3/tts/bidirection';

/** The rates the vendor documents for `audio_params.sample_rate`. */
export const VOLCENGINE_TTS_SAMPLE_RATES = [8000, 16_000, 22_050, 24_000, 32_000, 44_100, 48_000] as const;

/**
 * Resource ids of the 2.0 models: they send one sentence start for the whole answer, so the
 * provider gives no sentence marks with them and the turn shows its own cut of the text.
 */
const MODEL_2_RESOURCE = /^seed-(tts|icl)-2\.0/;

export const VolcengineTtsSchema = z
  .strictObject({
    provider: z.literal('volcengine'),
    /** The bidirectional endpoint (a proxy with the same protocol may be given instead). */
    url: z
      .url({ protocol: /^wss?$/, error: 'tts.url must be a ws:// or wss:// URL' })
      .default(VOLCENGINE_TTS_DEFAULT_URL),
    /** The old console's APP ID, sent as `X-Api-App-Key` (and `X-Api-App-Id`); needs `accessKey`. */
    appKey: z.string().min(1).optional(),
    /** The old console's Access Token, sent as `X-Api-Access-Key`. */
    accessKey: z.string().min(1).optional(),
    /** The new console's API key, sent as `X-Api-Key`: instead of `appKey` and `accessKey`. */
    apiKey: z.string().min(1).optional(),
    /**
     * `X-Api-Resource-Id`: the model generation and its billing. `seed-tts-1.0` (or the older
     * name `volc.service_type.10029`), `seed-tts-1.0-concurr`, `seed-tts-2.0`, `seed-icl-1.0`,
     * `seed-icl-1.0-concurr`, `seed-icl-2.0`. A voice works only with its generation's resource.
     */
    resourceId: z.string().min(1).default('seed-tts-1.0'),
    /** `req_params.speaker`: the voice id from the console's voice list. */
    voice: z.string().min(1).default('zh_female_wanwanxiaohe_moon_bigtts'),
    /** `req_params.model`, e.g. `seed-tts-1.1`, `seed-tts-2.0-expressive`; unset: the resource's default. */
    model: z.string().min(1).optional(),
    /**
     * `audio_params.format`. `pcm` (s16le mono, no decoding at all) is what the device path wants;
     * `mp3` and `ogg_opus` are decoded by one ffmpeg per answer.
     */
    format: z.enum(['pcm', 'mp3', 'ogg_opus']).default('pcm'),
    /** `audio_params.sample_rate`: 24000 is the downlink rate of every firmware the project knows. */
    sampleRate: z
      .literal(VOLCENGINE_TTS_SAMPLE_RATES, {
        error: `tts.sampleRate must be one of ${VOLCENGINE_TTS_SAMPLE_RATES.join(', ')}`,
      })
      .default(24_000),
    /** `audio_params.speech_rate`, −50…100: 0 is normal, 100 twice as fast, −50 half. */
    speechRate: z.number().int().min(-50).max(100).optional(),
    /** `audio_params.loudness_rate`, −50…100: 0 is normal, 100 twice as loud. */
    loudnessRate: z.number().int().min(-50).max(100).optional(),
    /** `audio_params.emotion` for the voices that have several (e.g. `happy`, `sad`, `angry`). */
    emotion: z.string().min(1).optional(),
    /** `audio_params.emotion_scale`, 1–5 (the vendor's default 4). */
    emotionScale: z.number().int().min(1).max(5).optional(),
    /**
     * `req_params.additions`: the vendor's advanced switches (`silence_duration`,
     * `explicit_language`, `disable_markdown_filter`, `post_process: {pitch}`, …), sent as the
     * JSON string the vendor expects.
     */
    additions: z.record(z.string(), z.unknown()).optional(),
    /**
     * How long a connection is kept open after an answer for the next one, in ms (saves the TLS
     * handshake and StartConnection on the next answer); 0: one connection per answer. On a
     * `-concurr` resource an idle open connection counts against the bought concurrency.
     */
    keepAliveMs: z.number().int().min(0).max(600_000).default(15_000),
    /** Longest wait from opening a stream to the vendor's SessionStarted, in ms. */
    connectTimeoutMs: z.number().int().positive().default(5000),
    /** Longest silence from the vendor once the answer's text is all sent, in ms. */
    timeoutMs: z.number().int().positive().default(10_000),
    /** Text one answer may send, in characters; past it the rest is dropped with a warning. */
    maxChars: z.number().int().positive().max(100_000).default(4000),
  })
  .refine((o) => o.apiKey !== undefined || (o.appKey !== undefined && o.accessKey !== undefined), {
    path: ['apiKey'],
    message: 'tts (volcengine) needs apiKey (new console), or appKey and accessKey (old console)',
  });
export type VolcengineTtsOptions = z.infer<typeof VolcengineTtsSchema>;

/** True when the resource is a 2.0 model (one sentence start per answer: no marks). */
export function isModel2Resource(resourceId: string): boolean {
  return MODEL_2_RESOURCE.test(resourceId);
}
