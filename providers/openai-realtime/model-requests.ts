/**
 * @module What a conversation with a realtime model sends, per dialect. OpenAI and Azure take the
 * GA shapes (typed with the openai SDK's client events); Qwen-Omni takes the beta-style session
 * (flat fields, Chat-Completions-nested tools, 16 kHz `pcm16` in, `pcm24` out) and `text` content
 * parts, which the SDK's types do not describe (typed here as `BetaClientEvent`).
 *
 * Turn detection is off (`turn_detection: null`) in every dialect: our own end of turn commits the
 * user's audio and asks for the response, so the device's listen modes (manual, auto, realtime),
 * barge-in and the end-of-turn settings work as with the cascade, and a vendor's VAD cannot answer
 * while the device is still in a manual push-to-talk turn or cut the user off on a short pause.
 */
import type {
  ConversationItemCreateEvent,
  ConversationItemTruncateEvent,
  InputAudioBufferAppendEvent,
  RealtimeClientEvent,
  RealtimeFunctionTool,
  ResponseCancelEvent,
  ResponseCreateEvent,
  SessionUpdateEvent,
} from 'openai/resources/realtime/realtime';
import type { ToolSpec } from '../../mcp/contract/tool-source.ts';
import { toOpenAiTools } from '../openai/to-openai.ts';
import type { RealtimeDialect } from './realtime-options.ts';

/** A client event in Qwen-Omni's beta-style shape (not among the SDK's GA types). */
export interface BetaClientEvent {
  type: 'session.update' | 'conversation.item.create';
  session?: Record<string, unknown>;
  item?: Record<string, unknown>;
}
export type ClientEvent = RealtimeClientEvent | BetaClientEvent;

/** The model's own transcription of the user's audio (OpenAI's choice; Qwen's is fixed by the service). */
const OPENAI_TRANSCRIPTION_MODEL = 'gpt-4o-mini-transcribe';
const QWEN_TRANSCRIPTION_MODEL = 'gummy-realtime-v1';

export interface SessionSettings {
  instructions?: string | undefined;
  tools?: readonly ToolSpec[] | undefined;
  voice?: string | undefined;
}

function gaTools(tools: readonly ToolSpec[]): RealtimeFunctionTool[] {
  return toOpenAiTools(tools).map(({ function: f }) => ({ type: 'function', ...f }));
}

/** The whole session at connect (`voice` set), or only what changed (`update`). */
export function sessionUpdate(dialect: RealtimeDialect, s: SessionSettings, full: boolean): ClientEvent {
  if (dialect === 'qwen-omni') {
    const session: Record<string, unknown> = {};
    if (full) {
      Object.assign(session, {
        modalities: ['text', 'audio'],
        voice: s.voice,
        input_audio_format: 'pcm16',
        output_audio_format: 'pcm24',
        input_audio_transcription: { model: QWEN_TRANSCRIPTION_MODEL },
        turn_detection: null,
      });
    }
    if (s.instructions !== undefined) session.instructions = s.instructions;
    if (s.tools !== undefined) session.tools = toOpenAiTools(s.tools);
    return { type: 'session.update', session };
  }
  const event: SessionUpdateEvent = {
    type: 'session.update',
    session: {
      type: 'realtime',
      ...(full
        ? {
            output_modalities: ['audio'],
            audio: {
              input: {
                format: { type: 'audio/pcm', rate: 24000 },
                transcription: { model: OPENAI_TRANSCRIPTION_MODEL },
                turn_detection: null,
              },
              output: { format: { type: 'audio/pcm', rate: 24000 }, ...(s.voice ? { voice: s.voice } : {}) },
            },
          }
        : {}),
      ...(s.instructions !== undefined ? { instructions: s.instructions } : {}),
      ...(s.tools !== undefined ? { tools: gaTools(s.tools), tool_choice: 'auto' as const } : {}),
    },
  };
  return event;
}

export function appendAudio(base64: string): InputAudioBufferAppendEvent {
  return { type: 'input_audio_buffer.append', audio: base64 };
}

export const COMMIT: RealtimeClientEvent = { type: 'input_audio_buffer.commit' };
export const CLEAR: RealtimeClientEvent = { type: 'input_audio_buffer.clear' };
export const RESPONSE_CREATE: ResponseCreateEvent = { type: 'response.create' };

export function responseCancel(responseId: string | undefined): ResponseCancelEvent {
  return responseId ? { type: 'response.cancel', response_id: responseId } : { type: 'response.cancel' };
}

export function truncate(itemId: string, audioEndMs: number): ConversationItemTruncateEvent {
  return { type: 'conversation.item.truncate', item_id: itemId, content_index: 0, audio_end_ms: audioEndMs };
}

/** A message item: the user's typed words, or words the assistant said outside a response. */
export function messageItem(dialect: RealtimeDialect, role: 'user' | 'assistant', text: string): ClientEvent {
  if (dialect === 'qwen-omni')
    return {
      type: 'conversation.item.create',
      item: { type: 'message', role, content: [{ type: role === 'user' ? 'input_text' : 'text', text }] },
    };
  const event: ConversationItemCreateEvent =
    role === 'user'
      ? { type: 'conversation.item.create', item: { type: 'message', role, content: [{ type: 'input_text', text }] } }
      : { type: 'conversation.item.create', item: { type: 'message', role, content: [{ type: 'output_text', text }] } };
  return event;
}

export function functionOutputItem(callId: string, output: string): ConversationItemCreateEvent {
  return { type: 'conversation.item.create', item: { type: 'function_call_output', call_id: callId, output } };
}
