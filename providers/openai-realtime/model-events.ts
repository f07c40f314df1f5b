/**
 * @module The server events a conversation with a realtime model reads, checked with zod at the
 * edge. Each schema is tied to the openai SDK's type of that event (`satisfies`), so a misspelt
 * event or field name fails the type check; fields we do not read are left unchecked.
 *
 * Qwen-Omni (and servers that kept the beta protocol) name the answer's events the beta way
 * (`response.audio.delta`, `response.audio_transcript.delta`, `response.text.delta`): those names
 * are read as their GA names in every dialect, since no GA server sends them with another meaning.
 */
import type {
  ConversationItemInputAudioTranscriptionCompletedEvent as TranscriptionCompletedEvent,
  InputAudioBufferCommittedEvent,
  RealtimeErrorEvent,
  ResponseAudioDeltaEvent,
  ResponseAudioTranscriptDeltaEvent,
  ResponseCreatedEvent,
  ResponseDoneEvent,
  ResponseFunctionCallArgumentsDeltaEvent as ArgsDeltaEvent,
  ResponseFunctionCallArgumentsDoneEvent as ArgsDoneEvent,
  ResponseOutputItemAddedEvent,
  ResponseTextDeltaEvent,
  SessionUpdatedEvent,
} from 'openai/resources/realtime/realtime';
import { z } from 'zod';

/** Beta event names → the GA names the schemas below use. */
const BETA_NAMES: Readonly<Record<string, string>> = {
  'response.audio.delta': 'response.output_audio.delta',
  'response.audio.done': 'response.output_audio.done',
  'response.audio_transcript.delta': 'response.output_audio_transcript.delta',
  'response.audio_transcript.done': 'response.output_audio_transcript.done',
  'response.text.delta': 'response.output_text.delta',
  'response.text.done': 'response.output_text.done',
};

/** The GA name of a server event type. */
export function gaEventType(type: string): string {
  return BETA_NAMES[type] ?? type;
}

const sessionUpdated = z.object({ type: z.literal('session.updated') }) satisfies z.ZodType<
  Pick<SessionUpdatedEvent, 'type'>
>;

const error = z.object({
  type: z.literal('error'),
  error: z.object({ type: z.string(), message: z.string(), code: z.string().nullish() }),
}) satisfies z.ZodType<
  Pick<RealtimeErrorEvent, 'type'> & { error: Pick<RealtimeErrorEvent['error'], 'type' | 'message' | 'code'> }
>;

const committed = z.object({
  type: z.literal('input_audio_buffer.committed'),
  item_id: z.string(),
}) satisfies z.ZodType<Pick<InputAudioBufferCommittedEvent, 'type' | 'item_id'>>;

const transcriptionCompleted = z.object({
  type: z.literal('conversation.item.input_audio_transcription.completed'),
  item_id: z.string(),
  transcript: z.string(),
}) satisfies z.ZodType<Pick<TranscriptionCompletedEvent, 'type' | 'item_id' | 'transcript'>>;

const responseCreated = z.object({
  type: z.literal('response.created'),
  response: z.object({ id: z.string().min(1) }),
}) satisfies z.ZodType<Pick<ResponseCreatedEvent, 'type'> & { response: { id: string } }>;

const outputItemAdded = z.object({
  type: z.literal('response.output_item.added'),
  response_id: z.string(),
  item: z.object({
    id: z.string().optional(),
    type: z.string(),
    call_id: z.string().optional(),
    name: z.string().optional(),
  }),
}) satisfies z.ZodType<
  Pick<ResponseOutputItemAddedEvent, 'type' | 'response_id'> & {
    item: { id?: string | undefined; type: string; call_id?: string | undefined; name?: string | undefined };
  }
>;

const audioDelta = z.object({
  type: z.literal('response.output_audio.delta'),
  response_id: z.string(),
  item_id: z.string(),
  delta: z.string(),
}) satisfies z.ZodType<Pick<ResponseAudioDeltaEvent, 'type' | 'response_id' | 'item_id' | 'delta'>>;

const transcriptDelta = z.object({
  type: z.literal('response.output_audio_transcript.delta'),
  response_id: z.string(),
  delta: z.string(),
}) satisfies z.ZodType<Pick<ResponseAudioTranscriptDeltaEvent, 'type' | 'response_id' | 'delta'>>;

const textDelta = z.object({
  type: z.literal('response.output_text.delta'),
  response_id: z.string(),
  delta: z.string(),
}) satisfies z.ZodType<Pick<ResponseTextDeltaEvent, 'type' | 'response_id' | 'delta'>>;

const argsDelta = z.object({
  type: z.literal('response.function_call_arguments.delta'),
  response_id: z.string(),
  call_id: z.string(),
  delta: z.string(),
}) satisfies z.ZodType<Pick<ArgsDeltaEvent, 'type' | 'response_id' | 'call_id' | 'delta'>>;

const argsDone = z.object({
  type: z.literal('response.function_call_arguments.done'),
  response_id: z.string(),
  call_id: z.string().min(1),
  // Some servers name the function only in the item (`response.output_item.added`).
  name: z.string().optional(),
  arguments: z.string(),
}) satisfies z.ZodType<
  Pick<ArgsDoneEvent, 'type' | 'response_id' | 'call_id' | 'arguments'> & { name?: string | undefined }
>;

const responseDone = z.object({
  type: z.literal('response.done'),
  response: z.object({
    id: z.string().min(1),
    status: z.enum(['completed', 'cancelled', 'failed', 'incomplete', 'in_progress']).optional(),
    status_details: z.object({ reason: z.string().optional() }).nullish(),
  }),
}) satisfies z.ZodType<
  Pick<ResponseDoneEvent, 'type'> & {
    response: { id: string; status?: ResponseDoneEvent['response']['status'] };
  }
>;

/** The server events the connection acts on (by GA name). */
export const modelEventSchema = z.discriminatedUnion('type', [
  sessionUpdated,
  error,
  committed,
  transcriptionCompleted,
  responseCreated,
  outputItemAdded,
  audioDelta,
  transcriptDelta,
  textDelta,
  argsDelta,
  argsDone,
  responseDone,
]);
export type ModelEvent = z.infer<typeof modelEventSchema>;

const READ: ReadonlySet<string> = new Set(modelEventSchema.options.map((o) => o.shape.type.value));

/** Events a model sends that need nothing from us: passed over without a log line. */
const PASSED_OVER: ReadonlySet<string> = new Set([
  'session.created',
  'conversation.created',
  'conversation.item.created',
  'conversation.item.added',
  'conversation.item.done',
  'conversation.item.truncated',
  'conversation.item.deleted',
  'conversation.item.input_audio_transcription.delta',
  'conversation.item.input_audio_transcription.failed',
  'input_audio_buffer.cleared',
  'input_audio_buffer.speech_started',
  'input_audio_buffer.speech_stopped',
  'rate_limits.updated',
  'response.content_part.added',
  'response.content_part.done',
  'response.output_item.done',
  'response.output_audio.done',
  'response.output_audio_transcript.done',
  'response.output_text.done',
]);

/** How a (GA-named) type is handled: read with `modelEventSchema`, passed over, or unknown (logged at debug, dropped). */
export function eventKind(gaType: string): 'read' | 'passed' | 'unknown' {
  if (READ.has(gaType)) return 'read';
  return PASSED_OVER.has(gaType) ? 'passed' : 'unknown';
}

/**
 * The PCM of an audio delta, or undefined when it is not canonical base64 of whole 16-bit samples.
 * Node's decoder skips what is not base64, so the check is that the bytes encode back to the text:
 * one native pass each way, where a regular expression over a delta costs several times the decode.
 */
export function decodePcm(base64: string): Buffer | undefined {
  const bytes = Buffer.from(base64, 'base64');
  return bytes.length % 2 === 0 && bytes.toString('base64') === base64 ? bytes : undefined;
}
