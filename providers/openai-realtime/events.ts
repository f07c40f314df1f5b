/**
 * @module The Realtime events a transcription session exchanges, as far as this client reads or
 * writes them. What we send is typed with the openai SDK's own client-event types; each server
 * event we read is checked with zod, and every schema is tied to the SDK's type of that event
 * (`satisfies`), so a misspelt event or field name fails the type check instead of passing silently.
 * Fields we do not read are left unchecked (the SDK's types grow with the API).
 */
import type {
  ConversationItemInputAudioTranscriptionCompletedEvent as CompletedEvent,
  ConversationItemInputAudioTranscriptionDeltaEvent as DeltaEvent,
  ConversationItemInputAudioTranscriptionFailedEvent as FailedEvent,
  InputAudioBufferAppendEvent,
  InputAudioBufferCommitEvent,
  InputAudioBufferCommittedEvent as CommittedEvent,
  RealtimeErrorEvent,
  SessionUpdateEvent,
} from 'openai/resources/realtime/realtime';
import { z } from 'zod';

/** The only input format for PCM: 24 kHz mono s16le. */
export const REALTIME_PCM_RATE = 24_000;

export interface TranscriptionSettings {
  model: string;
  language?: string | undefined;
  prompt?: string | undefined;
}

/**
 * The session's configuration: PCM at 24 kHz, the model, and no turn detection: our own end of
 * turn decides when the utterance is over (`input_audio_buffer.commit`), and the vendor's VAD must
 * not cut it into items of its own.
 */
export function sessionUpdate(t: TranscriptionSettings): SessionUpdateEvent {
  return {
    type: 'session.update',
    session: {
      type: 'transcription',
      audio: {
        input: {
          format: { type: 'audio/pcm', rate: REALTIME_PCM_RATE },
          transcription: {
            model: t.model,
            ...(t.language ? { language: t.language } : {}),
            ...(t.prompt ? { prompt: t.prompt } : {}),
          },
          turn_detection: null,
        },
      },
    },
  };
}

export function appendAudio(base64: string): InputAudioBufferAppendEvent {
  return { type: 'input_audio_buffer.append', audio: base64 };
}

export const COMMIT: InputAudioBufferCommitEvent = { type: 'input_audio_buffer.commit' };

const deltaSchema = z.object({
  type: z.literal('conversation.item.input_audio_transcription.delta'),
  item_id: z.string(),
  delta: z.string().optional(),
}) satisfies z.ZodType<Pick<DeltaEvent, 'type' | 'item_id' | 'delta'>>;

const completedSchema = z.object({
  type: z.literal('conversation.item.input_audio_transcription.completed'),
  item_id: z.string(),
  transcript: z.string(),
}) satisfies z.ZodType<Pick<CompletedEvent, 'type' | 'item_id' | 'transcript'>>;

const failedSchema = z.object({
  type: z.literal('conversation.item.input_audio_transcription.failed'),
  item_id: z.string(),
  error: z.object({ code: z.string().optional(), message: z.string().optional() }),
}) satisfies z.ZodType<Pick<FailedEvent, 'type' | 'item_id'> & { error: Pick<FailedEvent.Error, 'code' | 'message'> }>;

const committedSchema = z.object({
  type: z.literal('input_audio_buffer.committed'),
  item_id: z.string(),
}) satisfies z.ZodType<Pick<CommittedEvent, 'type' | 'item_id'>>;

const errorSchema = z.object({
  type: z.literal('error'),
  error: z.object({ type: z.string(), message: z.string(), code: z.string().nullish() }),
}) satisfies z.ZodType<
  Pick<RealtimeErrorEvent, 'type'> & { error: Pick<RealtimeErrorEvent['error'], 'type' | 'message' | 'code'> }
>;

/** The server events the stream acts on; any other type is only counted. */
export const readEventSchema = z.discriminatedUnion('type', [
  deltaSchema,
  completedSchema,
  failedSchema,
  committedSchema,
  errorSchema,
]);
export type ReadEvent = z.infer<typeof readEventSchema>;
const READ_TYPES: ReadonlySet<string> = new Set(readEventSchema.options.map((o) => o.shape.type.value));

/** True for the event types in `readEventSchema` (those must then pass it). */
export function isReadEventType(type: string): boolean {
  return READ_TYPES.has(type);
}
