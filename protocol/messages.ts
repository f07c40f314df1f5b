/**
 * @module Every JSON text message of the device protocol, both ways, as zod schemas
 * (spec: xiaozhi-protocol §4–§6). Device messages are parsed leniently (unknown fields are kept
 * and ignored, as firmware generations differ); server messages are built by typed helpers so a
 * field the firmware dereferences is never missing.
 */
import { z } from 'zod';
import type { Emotion } from '../core/emotions.ts';

/** Longest text we accept in a device message field (wake word, detect text). */
export const MAX_DEVICE_TEXT = 2000;

const SessionId = z.string().max(200).optional();

export const AudioParamsSchema = z.looseObject({
  format: z.string().max(32).optional(),
  sample_rate: z.number().int().positive().max(192000).optional(),
  channels: z.number().int().positive().max(8).optional(),
  frame_duration: z.number().int().positive().max(1000).optional(),
});
export type AudioParams = z.infer<typeof AudioParamsSchema>;

export const DeviceHelloSchema = z.looseObject({
  type: z.literal('hello'),
  // Old firmware (≤1.6.2) builds this by string concatenation; a numeric string is tolerated.
  version: z.union([z.number().int(), z.string().regex(/^\d+$/).transform(Number)]).optional(),
  features: z
    .looseObject({
      mcp: z.boolean().optional(),
      aec: z.boolean().optional(),
      glyph_push: z.boolean().optional(),
    })
    .optional(),
  transport: z.string().max(32).optional(),
  audio_params: AudioParamsSchema.optional(),
  session_id: SessionId,
});
export type DeviceHello = z.infer<typeof DeviceHelloSchema>;

export const ListenMode = { Auto: 'auto', Manual: 'manual', Realtime: 'realtime' } as const;
export type ListenMode = (typeof ListenMode)[keyof typeof ListenMode];

export const ListenSchema = z.discriminatedUnion('state', [
  z.looseObject({
    type: z.literal('listen'),
    session_id: SessionId,
    state: z.literal('start'),
    // Missing mode: firmware always sends one; third-party clients may not. Auto is the safe default.
    mode: z.enum(['auto', 'manual', 'realtime']).default('auto'),
  }),
  z.looseObject({ type: z.literal('listen'), session_id: SessionId, state: z.literal('stop') }),
  z.looseObject({
    type: z.literal('listen'),
    session_id: SessionId,
    state: z.literal('detect'),
    text: z.string().max(MAX_DEVICE_TEXT).default(''),
  }),
]);
export type Listen = z.infer<typeof ListenSchema>;

export const AbortSchema = z.looseObject({
  type: z.literal('abort'),
  session_id: SessionId,
  reason: z.string().max(100).optional(),
});
export type Abort = z.infer<typeof AbortSchema>;

/** The JSON-RPC payload is validated by the MCP layer; here it only has to be an object. */
export const DeviceMcpSchema = z.looseObject({
  type: z.literal('mcp'),
  session_id: SessionId,
  payload: z.record(z.string(), z.unknown()),
});
export type DeviceMcp = z.infer<typeof DeviceMcpSchema>;

/** Legacy IoT descriptors/states (firmware ≤1.7.x). Accepted and ignored. */
export const IotSchema = z.looseObject({ type: z.literal('iot'), session_id: SessionId });
export const GoodbyeSchema = z.looseObject({ type: z.literal('goodbye'), session_id: SessionId });

export type DeviceMessage =
  | DeviceHello
  | Listen
  | Abort
  | DeviceMcp
  | z.infer<typeof IotSchema>
  | z.infer<typeof GoodbyeSchema>;

const KNOWN_TYPES = new Set(['hello', 'listen', 'abort', 'mcp', 'iot', 'goodbye']);

export type ParseResult =
  | { ok: true; message: DeviceMessage }
  | { ok: false; kind: 'json' | 'not_object' | 'unknown_type' | 'invalid'; type?: string; error: string };

/** Parses one text frame from a device. Never throws; the error says what was wrong. */
export function parseDeviceMessage(text: string): ParseResult {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return { ok: false, kind: 'json', error: `malformed JSON: ${(err as Error).message}` };
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return { ok: false, kind: 'not_object', error: 'message is not a JSON object' };
  }
  const type = (raw as { type?: unknown }).type;
  if (typeof type !== 'string' || !KNOWN_TYPES.has(type)) {
    return {
      ok: false,
      kind: 'unknown_type',
      type: typeof type === 'string' ? type.slice(0, 40) : undefined,
      error: `unknown message type ${JSON.stringify(type)?.slice(0, 40)}`,
    };
  }
  const schema =
    type === 'hello'
      ? DeviceHelloSchema
      : type === 'listen'
        ? ListenSchema
        : type === 'abort'
          ? AbortSchema
          : type === 'mcp'
            ? DeviceMcpSchema
            : type === 'iot'
              ? IotSchema
              : GoodbyeSchema;
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? issue.path.join('.') : type;
    return {
      ok: false,
      kind: 'invalid',
      type,
      error: `invalid ${type} message at ${where}: ${issue?.message ?? 'invalid'}`,
    };
  }
  return { ok: true, message: parsed.data as DeviceMessage };
}

/** Longest broken `mcp` frame handed on for salvage. */
export const MAX_BROKEN_MCP_CHARS = 4096;

/**
 * The payload text of an `mcp` frame that is not JSON. The firmware builds its MCP replies by
 * concatenation and pastes error text unescaped (spec §9: `"message":"Unknown tool: a"b"`), so a
 * reply can break the whole frame; its payload is still worth handing to the device MCP, which
 * salvages the id and the error message. Undefined unless the text looks like such a frame.
 */
export function brokenMcpPayload(text: string): string | undefined {
  // The salvage regex backtracks (quadratic in the text: 60 KB of repeated `"error":{"message":"`
  // took 200 ms); a firmware error reply is a few hundred bytes.
  if (text.length > MAX_BROKEN_MCP_CHARS) return undefined;
  if (!text.trimStart().startsWith('{') || !/"type"\s*:\s*"mcp"/.test(text)) return undefined;
  const key = /"payload"\s*:\s*/.exec(text);
  if (!key) return undefined;
  const start = key.index + key[0].length;
  // The frame's own closing brace ends the payload (the firmware puts `payload` last).
  const end = text.lastIndexOf('}');
  const payload = text.slice(start, end).trim();
  return payload.startsWith('{') ? payload : undefined;
}

// ---------------------------------------------------------------------------------------------
// Server → device. Builders return plain objects; the caller serializes them.

/** Where and how an MQTT device sends its audio (protocol/udp-packet.ts): key and nonce as 32 hex characters. */
export interface UdpHelloBlock {
  server: string;
  port: number;
  key: string;
  nonce: string;
}

export interface ServerHello {
  type: 'hello';
  transport: 'websocket' | 'udp';
  session_id: string;
  audio_params: { format: 'opus'; sample_rate: number; channels: 1; frame_duration: number };
  /** MQTT+UDP sessions only. */
  udp?: UdpHelloBlock;
}

/** `udp`: the session's audio goes over UDP (the MQTT transport); absent: over the WebSocket. */
export function serverHello(
  sessionId: string,
  sampleRate: number,
  frameDuration: number,
  udp?: UdpHelloBlock,
): ServerHello {
  return {
    type: 'hello',
    // Mandatory: firmware 2.4.x dereferences `transport` without a null check.
    transport: udp ? 'udp' : 'websocket',
    session_id: sessionId,
    audio_params: { format: 'opus', sample_rate: sampleRate, channels: 1, frame_duration: frameDuration },
    ...(udp ? { udp } : {}),
  };
}

export type ServerMessage =
  | ServerHello
  | { type: 'stt'; session_id: string; text: string }
  | { type: 'llm'; session_id: string; emotion: string; text: string }
  | { type: 'tts'; session_id: string; state: 'start' | 'stop' }
  | { type: 'tts'; session_id: string; state: 'sentence_start'; text: string }
  | { type: 'mcp'; session_id: string; payload: Record<string, unknown> }
  | { type: 'system'; session_id: string; command: 'reboot' }
  | { type: 'alert'; session_id: string; status: string; message: string; emotion: string }
  /** MQTT transport: the server ends the audio session (the device closes its UDP side without replying). */
  | { type: 'goodbye'; session_id: string };

export const ServerMessageSchema = z.union([
  z.object({
    type: z.literal('hello'),
    transport: z.enum(['websocket', 'udp']),
    session_id: z.string(),
    audio_params: z.object({
      format: z.literal('opus'),
      sample_rate: z.number(),
      channels: z.literal(1),
      frame_duration: z.number(),
    }),
    udp: z
      .object({
        server: z.string(),
        port: z.number().int(),
        key: z.string().regex(/^[0-9a-f]{32}$/),
        nonce: z.string().regex(/^[0-9a-f]{32}$/),
      })
      .optional(),
  }),
  z.object({ type: z.literal('stt'), session_id: z.string(), text: z.string() }),
  z.object({ type: z.literal('llm'), session_id: z.string(), emotion: z.string(), text: z.string() }),
  z.object({ type: z.literal('tts'), session_id: z.string(), state: z.enum(['start', 'stop']) }),
  z.object({ type: z.literal('tts'), session_id: z.string(), state: z.literal('sentence_start'), text: z.string() }),
  z.object({ type: z.literal('mcp'), session_id: z.string(), payload: z.record(z.string(), z.unknown()) }),
  z.object({ type: z.literal('system'), session_id: z.string(), command: z.literal('reboot') }),
  z.object({
    type: z.literal('alert'),
    session_id: z.string(),
    status: z.string(),
    message: z.string(),
    emotion: z.string(),
  }),
  z.object({ type: z.literal('goodbye'), session_id: z.string() }),
]);

/** Emoji shown with each emotion (the firmware ignores `text`, other clients display it). */
export const EmotionEmoji: Readonly<Record<Emotion, string>> = {
  neutral: '😶',
  happy: '🙂',
  laughing: '😆',
  funny: '😂',
  sad: '😔',
  angry: '😠',
  crying: '😭',
  loving: '😍',
  embarrassed: '😳',
  surprised: '😯',
  shocked: '😱',
  thinking: '🤔',
  winking: '😉',
  cool: '😎',
  relaxed: '😌',
  delicious: '🤤',
  kissy: '😘',
  confident: '😏',
  sleepy: '😴',
  silly: '😜',
  confused: '🙄',
};
