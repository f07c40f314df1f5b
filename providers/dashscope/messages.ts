/**
 * @module DashScope's WebSocket inference protocol as CosyVoice speaks it: the three client
 * commands (JSON text frames: `run-task` opens a task with its settings, `continue-task` carries
 * text, `finish-task` ends the input, or cancels with `directive: cancel`) and the schema every
 * server event is checked against. Audio comes in binary frames, not described here.
 */
import { z } from 'zod';
import type { CosyVoiceTtsOptions } from './tts-options.ts';

/** Longest error code and message kept from a `task-failed`. */
const MAX_ERROR_CHARS = 300;

const header = (action: 'run-task' | 'continue-task' | 'finish-task', taskId: string) => ({
  action,
  task_id: taskId,
  streaming: 'duplex',
});

/** Opens a task: the model, voice and audio settings hold for the whole answer. */
export function runTask(o: CosyVoiceTtsOptions, taskId: string): string {
  const parameters: Record<string, unknown> = {
    text_type: 'PlainText',
    voice: o.voice,
    format: o.format,
    sample_rate: o.sampleRate,
  };
  if (o.rate !== undefined) parameters.rate = o.rate;
  if (o.pitch !== undefined) parameters.pitch = o.pitch;
  if (o.volume !== undefined) parameters.volume = o.volume;
  if (o.instruction !== undefined) parameters.instruction = o.instruction;
  if (o.languageHints !== undefined) parameters.language_hints = o.languageHints;
  return JSON.stringify({
    header: header('run-task', taskId),
    payload: {
      task_group: 'audio',
      task: 'tts',
      function: 'SpeechSynthesizer',
      model: o.model,
      parameters,
      // Empty, but the service refuses a run-task without it.
      input: {},
    },
  });
}

/** More text of the answer; the service groups fragments into sentences itself. */
export function continueTask(taskId: string, text: string): string {
  return JSON.stringify({ header: header('continue-task', taskId), payload: { input: { text } } });
}

/** The end of the text (the service speaks what it holds, then `task-finished`), or a cancel. */
export function finishTask(taskId: string, cancel = false): string {
  return JSON.stringify({
    header: header('finish-task', taskId),
    payload: { input: cancel ? { directive: 'cancel' } : {} },
  });
}

const Word = z.object({ text: z.string().max(1000) }).loose();

/** `result-generated`'s output: a sentence's start (with its text), a piece of its audio, its end. */
const Output = z
  .object({
    type: z.string().max(64).optional(),
    /** Where `sentence-begin` carries the sentence's text. */
    original_text: z.string().optional(),
    sentence: z
      .object({
        index: z.number().int().optional(),
        words: z.array(Word).max(10_000).optional(),
      })
      .loose()
      .optional(),
  })
  .loose();

/** One JSON event from the service (the fields read; others are ignored). */
export const DashscopeEventSchema = z.object({
  header: z
    .object({
      event: z.string().max(64),
      task_id: z.string().max(128).optional(),
      error_code: z.string().max(10_000).optional(),
      error_message: z.string().max(10_000).optional(),
    })
    .loose(),
  payload: z.object({ output: Output.nullish() }).loose().nullish(),
});
export type DashscopeEvent = z.infer<typeof DashscopeEventSchema>;

/** The text of a `sentence-begin`: its `original_text`, else its words. */
export function sentenceText(event: DashscopeEvent): string {
  const output = event.payload?.output;
  if (output?.original_text !== undefined) return output.original_text;
  return (output?.sentence?.words ?? []).map((w) => w.text).join('');
}

/** A `task-failed`'s code and message, shortened. */
export function failure(event: DashscopeEvent): { code: string; message: string } {
  return {
    code: (event.header.error_code ?? 'unknown').slice(0, MAX_ERROR_CHARS),
    message: (event.header.error_message ?? '').slice(0, MAX_ERROR_CHARS),
  };
}
