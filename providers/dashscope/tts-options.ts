/**
 * @module The options of Alibaba Cloud's CosyVoice speech synthesis over DashScope's WebSocket
 * inference protocol (`tts` with `provider: cosyvoice`). Named after the voice family users pick
 * it for (the console, pricing and voice lists all say CosyVoice); the folder is named after the
 * protocol, which DashScope's other streaming models share. Only the API key must be given.
 */
import { z } from 'zod';

/**
 * Beijing's endpoint. Singapore: `wss://dashscope-intl.aliyuncs.com/api-ws/v1/inference`; a
 * workspace's own host: `wss://<WorkspaceId>.cn-beijing.maas.aliyuncs.com/api-ws/v1/inference`
 * (or `.ap-southeast-1.`). A key works only in the region it was made in.
 */
export const DASHSCOPE_DEFAULT_URL = 'wss://dashscope.aliyuncs.com/api-ws/v1/inference';

/** The sample rates the service synthesises at. */
export const COSYVOICE_SAMPLE_RATES = [8000, 16000, 22050, 24000, 44100, 48000] as const;

/** The most characters one `continue-task` may carry (the vendor's limit). */
export const COSYVOICE_MAX_CONTINUE_CHARS = 20_000;

const sampleRate = z
  .number()
  .int()
  .min(8000)
  .max(48_000)
  .refine((r) => (COSYVOICE_SAMPLE_RATES as readonly number[]).includes(r), {
    message: `sampleRate must be one of ${COSYVOICE_SAMPLE_RATES.join(', ')}`,
  });

export const CosyVoiceTtsSchema = z.strictObject({
  provider: z.literal('cosyvoice'),
  /** The region's (or the workspace's) `/api-ws/v1/inference` WebSocket endpoint. */
  url: z.url({ protocol: /^wss?$/, error: 'tts.url must be a ws:// or wss:// URL' }).default(DASHSCOPE_DEFAULT_URL),
  /** The Model Studio (DashScope) API key of the region of `url`, sent as `Authorization: Bearer`. */
  apiKey: z.string().min(1),
  /** A workspace id, sent as `X-DashScope-WorkSpace` (the key's default workspace when unset). */
  workspace: z.string().min(1).optional(),
  /** `cosyvoice-v1`, `cosyvoice-v2`, `cosyvoice-v3-flash`, `cosyvoice-v3-plus`, …: the voice must be one of this model's. */
  model: z.string().min(1).default('cosyvoice-v2'),
  /** A voice of `model` (v2 voices end in `_v2`), or a cloned voice's id. */
  voice: z.string().min(1).default('longxiaochun_v2'),
  /**
   * `pcm`: raw s16le mono at `sampleRate`, nothing to decode (the default). `mp3` and `opus` (Ogg)
   * go through one ffmpeg per answer.
   */
  format: z.enum(['pcm', 'mp3', 'opus']).default('pcm'),
  /** The rate asked for; 24000 is the downlink rate of the firmware the project knows, so nothing is resampled. */
  sampleRate: sampleRate.default(24_000),
  /** Speaking rate, 0.5–2 (the service's 1 when unset). */
  rate: z.number().min(0.5).max(2).optional(),
  /** Pitch, 0.5–2 (the service's 1 when unset). */
  pitch: z.number().min(0.5).max(2).optional(),
  /** Loudness, 0–100 (the service's 50 when unset). */
  volume: z.number().int().min(0).max(100).optional(),
  /** How to speak (emotion, style, dialect), for the models and voices that take an instruction. */
  instruction: z.string().min(1).max(128).optional(),
  /** Languages of the text, e.g. `[zh]` or `[en]`, for the models that take the hint. */
  languageHints: z.array(z.string().min(2).max(16)).min(1).max(4).optional(),
  /**
   * Most characters of one answer sent to the service; the rest is dropped with a warning. At most
   * the service's 20,000 per `continue-task`, so the text kept before the task starts fits one.
   */
  maxChars: z.number().int().min(1).max(COSYVOICE_MAX_CONTINUE_CHARS).default(4000),
  /** Longest wait from opening an answer to the service's `task-started` (connection included), in ms. */
  connectTimeoutMs: z.number().int().min(100).max(60_000).default(5000),
  /** Longest silence from the service, once the answer is finished and audio is owed, in ms. */
  timeoutMs: z.number().int().min(100).max(120_000).default(10_000),
  /**
   * A connection is kept this long after an answer for the next one (no handshakes then); 0 opens
   * one per answer. The service's rule for a connection without a task is not documented (within
   * a task it is 23 s without a command), so the bound stays under that.
   */
  keepAliveMs: z.number().int().min(0).max(20_000).default(15_000),
});
export type CosyVoiceTtsOptions = z.infer<typeof CosyVoiceTtsSchema>;
