/**
 * @module What an agent may set: the assistant a device talks to (its role, language, voice,
 * models, tools, memory mode, greeting). Every field is optional: what an agent leaves unset falls
 * back to the server's configuration, so the configuration alone is the default agent. The same
 * schema validates the configuration's `agents:` list, the admin API's bodies and the rows read
 * back from the store (stored as JSON).
 */
import { z } from 'zod';
import { AsrSchema, TtsSchema } from '../../providers/index.ts';
import { LANGUAGES } from './language.ts';
import { isTimeZone } from '../../mcp/local-tools/local-time.ts';

/** Agent names appear in URLs (`/api/admin/agents/{name}`) and logs: short, no spaces or slashes. */
export const AgentNameSchema = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, 'letters, digits, _ . - (starting with a letter or digit)');

/** The chat model an agent uses; unset fields come from the configuration's `llm`. */
export const AgentLlmSchema = z.strictObject({
  baseURL: z.url().max(500).optional(),
  model: z.string().min(1).max(200).optional(),
  /** Write-only: never returned by the admin API, redacted from logs by value. */
  apiKey: z.string().max(500).optional(),
  temperature: z.number().min(0).max(2).optional(),
  /**
   * The chat model accepts images: the camera's photos (`POST /mcp/vision/explain`) go to it
   * instead of a vision model (`vision` below, else the configuration's `vision`).
   */
  images: z.boolean().optional(),
});

/** The vision model an agent's camera photos go to; unset fields come from the configuration's `vision`. */
export const AgentVisionSchema = z.strictObject({
  baseURL: z.url().max(500).optional(),
  model: z.string().min(1).max(200).optional(),
  /** Write-only like `llm.apiKey`: never returned by the admin API, redacted from logs by value. */
  apiKey: z.string().max(500).optional(),
});

export const MEMORY_MODES = ['none', 'history', 'summary'] as const;

export const AgentSettingsSchema = z.strictObject({
  /** The role: the system prompt (placeholders as in `llm.systemPrompt`). */
  systemPrompt: z.string().min(1).max(20_000).optional(),
  /** Switches the default texts, ASR hint and embedded voice like the configuration's `language`. */
  language: z.enum(LANGUAGES).optional(),
  /**
   * The devices' IANA time zone (`Europe/Berlin`): the prompt's date and time, reminders' local
   * times. Unset: `tools.timeZone`, else `server.timezoneOffsetMinutes`, else the server's zone.
   */
  timeZone: z.string().max(64).refine(isTimeZone, 'must be an IANA time zone such as Europe/Berlin').optional(),
  greeting: z.string().min(1).max(500).optional(),
  llm: AgentLlmSchema.optional(),
  /** The vision model of its camera photos (used unless `llm.images` says the chat model takes them). */
  vision: AgentVisionSchema.optional(),
  /** A whole TTS provider block (as the configuration's `tts`). */
  tts: TtsSchema.optional(),
  /** A whole ASR provider block (as the configuration's `asr`). */
  asr: AsrSchema.optional(),
  tools: z
    .strictObject({
      /** Names from the configuration's `mcpServers`; unset: all of them. */
      mcpServers: z.array(z.string().min(1).max(100)).max(100).optional(),
      /** Local tool names (`get_current_datetime`, `end_conversation`, `play_music`, the memory and reminder tools); unset: all of them. */
      local: z.array(z.string().min(1).max(100)).max(100).optional(),
    })
    .optional(),
  /** What the device's conversations leave behind (used by memory): default `summary`. */
  memory: z.enum(MEMORY_MODES).optional(),
});
export type AgentSettings = z.infer<typeof AgentSettingsSchema>;

/** One agent in the configuration's `agents:` list: created at start if missing. */
export const ConfigAgentSchema = AgentSettingsSchema.extend({
  name: AgentNameSchema,
  /** Device-Ids (MACs) that use this agent. */
  devices: z.array(z.string().min(1).max(64)).max(10_000).default([]),
});
export type ConfigAgent = z.infer<typeof ConfigAgentSchema>;
