/**
 * @module The bidirectional TTS protocol's events and the JSON inside its frames: the numbers, the
 * StartSession and TaskRequest payloads built from the options, and zod schemas for what the
 * server sends, checked before anything reads them.
 */
import { z } from 'zod';
import type { VolcengineTtsOptions } from './tts-options.ts';

/** Event numbers (the frame's int32 after the header). */
export const TtsEvent = {
  StartConnection: 1,
  FinishConnection: 2,
  ConnectionStarted: 50,
  ConnectionFailed: 51,
  ConnectionFinished: 52,
  StartSession: 100,
  CancelSession: 101,
  FinishSession: 102,
  SessionStarted: 150,
  SessionCanceled: 151,
  SessionFinished: 152,
  SessionFailed: 153,
  TaskRequest: 200,
  SentenceStart: 350,
  SentenceEnd: 351,
  Response: 352,
  Subtitle: 364,
} as const;

/** The vendor's "OK" status code (SessionFinished). */
export const STATUS_OK = 20_000_000;

const NAMESPACE = 'BidirectionalTTS';
const UID = 'xiaozhi-ts-server';

/** `req_params` without the text: the voice settings, the same for every frame of a session. */
export function ttsReqParams(o: VolcengineTtsOptions): Record<string, unknown> {
  const audio: Record<string, unknown> = { format: o.format, sample_rate: o.sampleRate };
  if (o.speechRate !== undefined) audio.speech_rate = o.speechRate;
  if (o.loudnessRate !== undefined) audio.loudness_rate = o.loudnessRate;
  if (o.emotion !== undefined) audio.emotion = o.emotion;
  if (o.emotionScale !== undefined) audio.emotion_scale = o.emotionScale;
  return {
    speaker: o.voice,
    ...(o.model !== undefined ? { model: o.model } : {}),
    audio_params: audio,
    // The vendor takes `additions` as a JSON string, not an object.
    ...(o.additions !== undefined ? { additions: JSON.stringify(o.additions) } : {}),
  };
}

/** StartSession's payload: where the vendor reads the settings. */
export function startSessionPayload(reqParams: Record<string, unknown>): object {
  return { user: { uid: UID }, event: TtsEvent.StartSession, namespace: NAMESPACE, req_params: reqParams };
}

/**
 * A TaskRequest's payload. The vendor reads only the text here; the settings are repeated anyway,
 * as the production clients send them (xinnan's), so a gateway that reads them per task agrees.
 */
export function taskRequestPayload(reqParams: Record<string, unknown>, text: string): object {
  return { user: { uid: UID }, event: TtsEvent.TaskRequest, namespace: NAMESPACE, req_params: { ...reqParams, text } };
}

/** SessionFinished / SessionFailed / SessionCanceled / ConnectionFailed: a status and a message. */
export const TtsStatusSchema = z.object({
  status_code: z.number().int().optional(),
  message: z.string().optional(),
});

/**
 * TTSSentenceStart: the sentence about to be spoken. Production clients read a top-level `text`;
 * the documentation's field table has `res_params.text`; either is taken.
 */
export const TtsSentenceStartSchema = z.object({
  text: z.string().optional(),
  res_params: z.object({ text: z.string().optional() }).optional(),
});

/** A payload's JSON, or `{}` for an empty one; undefined when it is not JSON. */
export function payloadJson(bytes: Buffer): unknown {
  if (bytes.length === 0) return {};
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch {
    return undefined;
  }
}
