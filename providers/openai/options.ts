/**
 * @module The options of the OpenAI-compatible clients, as zod schemas: the configuration file's
 * `llm`, `asr` (provider `openai`) and `tts` (provider `openai`) blocks are made of these
 * (server/config-schema.ts composes them), and each client takes the parsed type, so a default
 * lives in one place.
 */
import { z } from 'zod';

/** Fields every OpenAI-compatible endpoint takes. */
const endpoint = {
  /** Base URL including the version path, e.g. `http://127.0.0.1:11434/v1`. */
  baseURL: z.url(),
  /** Empty for endpoints without auth (local servers): no Authorization header is sent then. */
  apiKey: z.string().default(''),
};

/** The chat model client (`llm/types.ts` `LlmClient`). */
export const OpenAiLlmSchema = z.strictObject({
  ...endpoint,
  baseURL: endpoint.baseURL.default('http://127.0.0.1:11434/v1'),
  model: z.string().min(1).default('qwen2.5:3b'),
  /** Longest wait for the first chunk and between chunks, in ms. */
  timeoutMs: z.number().int().positive().default(30_000),
  /** Retries of retryable failures (5xx, 408, 429, timeout, unreachable) before the first delta. */
  maxRetries: z.number().int().min(0).max(5).default(1),
  temperature: z.number().min(0).max(2).optional(),
  /** Extra HTTP headers on every request. */
  headers: z.record(z.string(), z.string()).default({}),
  /** Extra body fields merged into every request (e.g. `max_tokens`, `top_p`, provider switches). */
  extraBody: z.record(z.string(), z.unknown()).default({}),
});
export type OpenAiLlmOptions = z.infer<typeof OpenAiLlmSchema>;

/** The client's own options out of a larger block (the configuration's `llm` also holds the ReAct loop's). */
export function pickLlmOptions(block: OpenAiLlmOptions): OpenAiLlmOptions {
  return z.object(OpenAiLlmSchema.shape).parse(block);
}

/** Any OpenAI-compatible `/v1/audio/transcriptions` (OpenAI, Whisper servers, vLLM, cloud providers). */
export const OpenAiAsrSchema = z.strictObject({
  provider: z.literal('openai'),
  ...endpoint,
  /** e.g. `whisper-1`, `gpt-4o-mini-transcribe`, or the served model name. */
  model: z.string().min(1).default('whisper-1'),
  /** ISO-639-1 hint, e.g. `en`, `zh`. */
  language: z.string().optional(),
  /** Text that biases spelling (names, jargon). */
  prompt: z.string().optional(),
  /** Whole request (upload and answer), in ms. */
  timeoutMs: z.number().int().positive().default(30_000),
});
export type OpenAiAsrOptions = z.infer<typeof OpenAiAsrSchema>;

/** Any OpenAI-compatible `/v1/audio/speech` (OpenAI, vLLM-style servers, local TTS servers). */
export const OpenAiTtsSchema = z.strictObject({
  provider: z.literal('openai'),
  ...endpoint,
  model: z.string().min(1).default('tts-1'),
  voice: z.string().min(1).default('alloy'),
  /**
   * `response_format`. `pcm`, `wav` and `opus` (Ogg/Opus) are decoded by the session's media
   * worker as they arrive; `mp3`, `aac` and `flac` need one ffmpeg per sentence (60–90 ms to start).
   */
  format: z.enum(['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm']).default('wav'),
  /** Sample rate of `pcm` answers (OpenAI's is 24000). */
  pcmSampleRate: z.number().int().min(8000).max(48_000).default(24_000),
  /** Speaking rate, 0.25–4 (the service's default when unset). */
  speed: z.number().min(0.25).max(4).optional(),
  /** How to speak (tone, accent), for voices that take instructions (gpt-4o-mini-tts). */
  instructions: z.string().optional(),
  /** Longest wait for the answer to start and between its chunks, in ms. */
  timeoutMs: z.number().int().positive().default(30_000),
});
export type OpenAiTtsOptions = z.infer<typeof OpenAiTtsSchema>;
