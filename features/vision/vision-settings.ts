/**
 * @module The `vision` block of the configuration: the camera endpoint the server hosts
 * (`POST /mcp/vision/explain`), the default vision model it asks, and the endpoint's bounds. The
 * vision room owns these settings; server/config-schema.ts composes them into the configuration.
 * An agent may name its own model (`vision` in its settings) or say its chat model takes images
 * (`llm.images`): see features/vision/model-choice.ts.
 */
import { z } from 'zod';

export const VisionSchema = z.strictObject({
  /**
   * Host `POST /mcp/vision/explain` and advertise it (with a per-session token) in each device's
   * MCP `initialize`. `deviceMcp.vision.url`, when set, is advertised instead.
   */
  enabled: z.boolean().default(false),
  /** The default vision model's OpenAI-compatible base URL (Ollama: `http://localhost:11434/v1`). */
  baseURL: z.string().default(''),
  /** Its key; empty: no Authorization header. Redacted from logs by value. */
  apiKey: z.string().default(''),
  /** Its model name (`qwen2.5vl:7b`, `qwen-vl-max`, `gpt-4o-mini`). */
  model: z.string().default(''),
  /** Bytes of one photo at most: the upload is cut off at this size while it streams in (413). */
  maxImageBytes: z.number().int().min(1024).max(16_777_216).default(1_048_576),
  /** Photos one device may send in any minute (429 past it). */
  imagesPerMinute: z.number().int().min(1).max(600).default(6),
  /** The vision model's answer, ms (504 past it). */
  timeoutMs: z.number().int().min(1000).max(300_000).default(20_000),
  /**
   * The whole upload (headers to the last byte) must arrive within this, ms (408 and the socket
   * closed past it); `server.httpRequestTimeoutMs` still bounds every request.
   */
  uploadTimeoutMs: z.number().int().min(500).max(120_000).default(8000),
  /**
   * One photo's decode by ffmpeg (after its header check), ms: past it the decode is killed and
   * the upload answered 503 (a photo within `maxImageBytes` decodes in well under a second; one
   * that does not is a server short of CPU or a pathological file).
   */
  decodeTimeoutMs: z.number().int().min(500).max(60_000).default(5000),
  /**
   * Photos in flight at once at most, server-wide (from its body's first byte to the model's
   * answer): each holds its photo, and at the model its base64 copies, for up to `timeoutMs`.
   * Past it an upload gets 503 before its body is kept.
   */
  maxUploads: z.number().int().min(1).max(1024).default(16),
  /** Photos decoded at once at most, server-wide (one ffmpeg each); past it an upload gets 503. */
  maxDecodes: z.number().int().min(1).max(64).default(2),
  /** How long a session's token is accepted at most, ms; it is revoked when the session ends anyway. */
  tokenMaxAgeMs: z
    .number()
    .int()
    .min(60_000)
    .max(24 * 3_600_000)
    .default(3_600_000),
  /**
   * Opt-in: keep each device's last photo (in memory, for the console's device view; deletable
   * there). Off: a photo is never kept past its request.
   */
  keepLast: z.boolean().default(false),
  /** Devices whose last photo is kept at most (the oldest dropped first). */
  keepLastDevices: z.number().int().min(1).max(10_000).default(100),
  /** Bytes all kept photos take at most (the oldest dropped first). */
  keepLastBytes: z.number().int().min(1024).max(1_073_741_824).default(33_554_432),
});
export type VisionSettings = z.infer<typeof VisionSchema>;
