/**
 * @module The options of a speech-to-speech ("realtime") conversation model over OpenAI's Realtime
 * protocol (an agent's `realtime` block with `provider: openai-realtime`): OpenAI itself, Azure
 * OpenAI, Alibaba Cloud's Qwen-Omni realtime models (DashScope), or a self-hosted server speaking
 * the same events. The `dialect` picks the session shape and event names; where a setting's
 * default depends on it (URL, model, voice), the parsed options carry the dialect's default.
 */
import { z } from 'zod';
import { isPlainBaseURL } from './options.ts';

export const REALTIME_DIALECTS = ['openai', 'azure', 'qwen-omni'] as const;
export type RealtimeDialect = (typeof REALTIME_DIALECTS)[number];

/** What a dialect fills in when the options leave it out (Azure has no public URL: it must be written). */
export const DIALECT_DEFAULTS: Record<RealtimeDialect, { baseURL?: string; model: string; voice: string }> = {
  openai: { baseURL: 'https://api.openai.com/v1', model: 'gpt-realtime', voice: 'marin' },
  azure: { model: 'gpt-realtime', voice: 'marin' },
  'qwen-omni': {
    baseURL: 'https://dashscope.aliyuncs.com/api-ws/v1',
    model: 'qwen3-omni-flash-realtime',
    voice: 'Cherry',
  },
};

/** OpenAI cuts a session at 60 minutes without warning: reconnect between turns before that. */
const DEFAULT_MAX_SESSION_MS = 55 * 60_000;
/** Qwen-Omni's limit is 120 minutes. */
const QWEN_MAX_SESSION_MS = 115 * 60_000;
/** Upper bounds of the waits: well below the 2^31-1 ms past which Node fires a timer at once. */
const MAX_CONNECT_TIMEOUT_MS = 60_000;
const MAX_RESPONSE_TIMEOUT_MS = 10 * 60_000;
const MAX_SESSION_MS = 24 * 3_600_000;

const written = z.strictObject({
  provider: z.literal('openai-realtime'),
  /** Which flavour of the protocol: `openai` (GA events), `azure` (GA, Azure's URL and key header), `qwen-omni` (beta-style events, 16 kHz in). */
  dialect: z.enum(REALTIME_DIALECTS).default('openai'),
  /**
   * Up to the version path; the client appends `/realtime?model=…`. `https:`/`wss:` connect with
   * TLS, `http:`/`ws:` without (a self-hosted server on loopback or a private net). Default: the
   * dialect's public endpoint (Azure: required, `https://RESOURCE.openai.azure.com/openai/v1`).
   */
  baseURL: z.url({ protocol: /^(https?|wss?)$/ }).optional(),
  /** Sent as `Authorization: Bearer` (Azure: `api-key`); empty: no credential is sent. */
  apiKey: z.string().default(''),
  /** The model (Azure: the deployment name). Default per dialect. */
  model: z.string().min(1).optional(),
  /** The voice it answers in (OpenAI: `marin`, `cedar`, `alloy`, …; Qwen-Omni: `Cherry`, `Chelsie`, …). */
  voice: z.string().min(1).optional(),
  /** Text appended to the agent's own prompt in the session's instructions (e.g. "answer in one sentence"). */
  instructions: z.string().max(8000).optional(),
  /** A PEM file of the CA to trust (instead of the system's) for a `https:`/`wss:` server with a private certificate. */
  ca: z.string().min(1).optional(),
  /** Longest wait for the connection (TCP, TLS, WebSocket upgrade) and the session's configuration, in ms. */
  connectTimeoutMs: z.number().int().positive().max(MAX_CONNECT_TIMEOUT_MS).default(5000),
  /** Longest wait from asking for a response to its first event, and between its events, in ms: past it the connection is cut. */
  responseTimeoutMs: z.number().int().positive().max(MAX_RESPONSE_TIMEOUT_MS).default(15_000),
  /** A connection older than this is closed between turns and a new one opened (the vendors cut sessions: OpenAI 60 min, Qwen 120). Default per dialect. */
  maxSessionMs: z.number().int().positive().max(MAX_SESSION_MS).optional(),
  /** Seconds of user audio a connection may send per minute; past it the rest of that minute's audio is dropped. */
  maxAudioSecondsPerMinute: z.number().int().positive().max(600).default(90),
  /** Function calls one response may make; past it the response is cancelled. */
  maxFunctionCallsPerResponse: z.number().int().positive().max(64).default(8),
});

export const OpenAiRealtimeModelSchema = written
  .superRefine((o, ctx) => {
    if (o.ca !== undefined && o.baseURL !== undefined && isPlainBaseURL(o.baseURL))
      ctx.addIssue({
        code: 'custom',
        path: ['ca'],
        message: 'ca is for a https: or wss: baseURL; this one has no TLS',
      });
    if (o.dialect === 'azure' && o.baseURL === undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['baseURL'],
        message: 'azure needs baseURL (https://RESOURCE.openai.azure.com/openai/v1)',
      });
    if (o.dialect === 'azure' && o.apiKey === '')
      ctx.addIssue({ code: 'custom', path: ['apiKey'], message: 'azure needs apiKey (the resource key)' });
  })
  .transform((o) => {
    const d = DIALECT_DEFAULTS[o.dialect];
    return {
      ...o,
      baseURL: o.baseURL ?? d.baseURL ?? '',
      model: o.model ?? d.model,
      voice: o.voice ?? d.voice,
      maxSessionMs: o.maxSessionMs ?? (o.dialect === 'qwen-omni' ? QWEN_MAX_SESSION_MS : DEFAULT_MAX_SESSION_MS),
    };
  });
export type OpenAiRealtimeModelOptions = z.infer<typeof OpenAiRealtimeModelSchema>;
