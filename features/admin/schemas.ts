/**
 * @module The admin API's shapes, in zod: these validate every request (params and bodies) and
 * describe every answer, and the OpenAPI document (openapi.ts) is generated from the same objects.
 */
import { z } from 'zod';
import { DeviceIdSchema } from '../../protocol/ota.ts';
import { AgentLlmSchema, AgentNameSchema, AgentSettingsSchema, AgentVisionSchema } from '../agents/index.ts';

/** A device's display name in the console. */
export const AliasSchema = z.string().trim().min(1, 'must not be empty').max(64, 'at most 64 characters');

/** The spoken 6-digit code; spaces (as people type it from speech) are ignored. */
export const CodeSchema = z
  .string()
  .transform((s) => s.replace(/\s+/g, ''))
  .pipe(z.string().regex(/^\d{6}$/, 'must be the 6-digit code the device speaks'));

export const DeviceParams = z.strictObject({ deviceId: DeviceIdSchema });
export const AgentParams = z.strictObject({ name: AgentNameSchema });

export const BindBody = z.strictObject({
  code: CodeSchema,
  /** Absent: the default agent. */
  agent: AgentNameSchema.optional(),
  alias: AliasSchema.optional(),
});

/** Absent: unchanged; null: back to the default agent / no alias. */
export const DevicePatchBody = z.strictObject({
  agent: AgentNameSchema.nullable().optional(),
  alias: AliasSchema.nullable().optional(),
});

export const AgentCreateBody = z.strictObject({
  name: AgentNameSchema,
  settings: AgentSettingsSchema.default({}),
});

/**
 * A merge patch of an agent's settings: a key present replaces that setting, `null` removes it
 * (it falls back to the server's configuration again), a key absent is kept. `llm` is merged key
 * by key the same way, so changing the model keeps the write-only API key.
 */
export const AgentLlmPatchSchema = z.strictObject({
  baseURL: AgentLlmSchema.shape.baseURL.unwrap().nullable().optional(),
  model: AgentLlmSchema.shape.model.unwrap().nullable().optional(),
  apiKey: AgentLlmSchema.shape.apiKey.unwrap().nullable().optional(),
  temperature: AgentLlmSchema.shape.temperature.unwrap().nullable().optional(),
  images: AgentLlmSchema.shape.images.unwrap().nullable().optional(),
});
/** `vision` is merged key by key like `llm`: changing the model keeps its write-only key. */
export const AgentVisionPatchSchema = z.strictObject({
  baseURL: AgentVisionSchema.shape.baseURL.unwrap().nullable().optional(),
  model: AgentVisionSchema.shape.model.unwrap().nullable().optional(),
  apiKey: AgentVisionSchema.shape.apiKey.unwrap().nullable().optional(),
});
const S = AgentSettingsSchema.shape;
export const AgentSettingsPatchSchema = z.strictObject({
  systemPrompt: S.systemPrompt.unwrap().nullable().optional(),
  language: S.language.unwrap().nullable().optional(),
  timeZone: S.timeZone.unwrap().nullable().optional(),
  greeting: S.greeting.unwrap().nullable().optional(),
  llm: AgentLlmPatchSchema.nullable().optional(),
  vision: AgentVisionPatchSchema.nullable().optional(),
  tts: S.tts.unwrap().nullable().optional(),
  asr: S.asr.unwrap().nullable().optional(),
  tools: S.tools.unwrap().nullable().optional(),
  memory: S.memory.unwrap().nullable().optional(),
});
export const AgentPatchBody = z.strictObject({ settings: AgentSettingsPatchSchema });

export const SignInBody = z.strictObject({ token: z.string().min(1, 'is required').max(1000) });

// --- answers ---

export const ErrorView = z.object({
  error: z.string(),
  /** The request field at fault (`body.agent`, `params.deviceId`), when one is. */
  field: z.string().optional(),
});

export const DeviceView = z.object({
  deviceId: z.string(),
  clientId: z.string(),
  /** bound: may connect; pending: waiting for its spoken code to be bound; seen: neither (open mode, or its code expired). */
  state: z.enum(['bound', 'pending', 'seen']),
  /** pending: the code the device speaks. */
  code: z.string().nullable(),
  codeExpiresAt: z.string().nullable(),
  /** bound: the binding's short id (`npm run devices -- revoke ID`). */
  bindingId: z.string().nullable(),
  boundAt: z.string().nullable(),
  alias: z.string().nullable(),
  /** null: the default agent. */
  agent: z.string().nullable(),
  /** A session of this device is open on some replica. */
  online: z.boolean(),
  board: z.string().nullable(),
  firmware: z.string().nullable(),
  firstSeen: z.string().nullable(),
  lastSeen: z.string().nullable(),
});
export type DeviceView = z.infer<typeof DeviceView>;
export const DeviceList = z.object({ devices: z.array(DeviceView) });
export const RevokeResult = z.object({
  revoked: z.array(z.object({ bindingId: z.string(), deviceId: z.string(), clientId: z.string() })),
});

/** An agent as the API returns it: its settings without API keys and credentials, and whether each is set. */
export const AgentView = z.object({
  name: z.string(),
  settings: AgentSettingsSchema,
  /** An `llm.apiKey` is stored; its value is never returned. */
  apiKeySet: z.boolean(),
  /** A `vision.apiKey` is stored; never returned either. */
  visionApiKeySet: z.boolean(),
  /** A credential of the `tts` / `asr` block is stored (`apiKey`, a vendor's `accessKey`, a token); never returned either. */
  ttsApiKeySet: z.boolean(),
  asrApiKeySet: z.boolean(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type AgentView = z.infer<typeof AgentView>;
export const AgentList = z.object({ agents: z.array(AgentView) });

export const SessionView = z.object({
  sessionId: z.string(),
  deviceId: z.string().nullable(),
  clientId: z.string().nullable(),
  agent: z.string().nullable(),
  replica: z.string(),
  since: z.string(),
});
export const SessionList = z.object({ sessions: z.array(SessionView) });
export const SignedIn = z.object({ signedIn: z.literal(true), expiresAt: z.string() });
