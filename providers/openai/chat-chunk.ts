/**
 * @module The shape of one streamed chat-completion chunk, validated at the edge: the model server
 * is outside the process, and a chunk we cannot read must fail the request clearly, not surface
 * later as `undefined` text or a tool call without a name. Only the fields the client reads are
 * checked; anything else a provider adds (reasoning text, logprobs, ids) passes unread.
 */
import { z } from 'zod';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { ToolCallDelta } from './tool-call-accumulator.ts';
import type { LlmUsage } from '../../llm/types.ts';

const toolCallDelta = z.object({
  index: z.number().int().nonnegative().optional(),
  id: z.string().nullish(),
  function: z.object({ name: z.string().nullish(), arguments: z.string().nullish() }).nullish(),
});

const chunkSchema = z.object({
  choices: z
    .array(
      z.object({
        delta: z.object({ content: z.string().nullish(), tool_calls: z.array(toolCallDelta).nullish() }).nullish(),
        finish_reason: z.string().nullish(),
      }),
    )
    .nullish(),
  usage: z
    .object({
      prompt_tokens: z.number().optional(),
      completion_tokens: z.number().optional(),
      total_tokens: z.number().optional(),
    })
    .nullish(),
});

export interface ChatChunk {
  choices?: Array<{
    delta?: { content?: string | null; tool_calls?: ToolCallDelta[] | null } | null;
    finish_reason?: string | null;
  }> | null;
  usage?: LlmUsage;
}

/** Validates one chunk; a chunk of another shape fails the request (provider_failed; not retried: the server would send it again). */
export function parseChatChunk(raw: unknown): ChatChunk {
  const r = chunkSchema.safeParse(raw);
  if (!r.success) {
    const issue = r.error.issues[0];
    const where = issue ? `${issue.path.join('.') || '(chunk)'}: ${issue.message}` : 'unknown shape';
    throw new VoiceError(ErrorCode.ProviderFailed, `LLM sent a chunk of an unknown shape (${where})`);
  }
  const { choices, usage } = r.data;
  if (!usage) return { choices };
  const promptTokens = usage.prompt_tokens ?? 0;
  const completionTokens = usage.completion_tokens ?? 0;
  return {
    choices,
    usage: { promptTokens, completionTokens, totalTokens: usage.total_tokens ?? promptTokens + completionTokens },
  };
}
