/**
 * @module Messages between the main thread and the provider thread (server/providers/). Requests
 * carry an id (`rid`); an LLM request is answered by its events then `end`, an ASR request by
 * `text`; either may end with `error` instead. PCM is transferred, not copied.
 */
import type { ThreadLogRecord } from '../../core/thread-logger.ts';
import type { AsrOptions } from '../../providers/index.ts';
import type { OpenAiLlmOptions } from '../../providers/openai/options.ts';
import type { ChatMessage, LlmEvent } from '../../llm/types.ts';
import type { ToolSpec } from '../../mcp/tool-source.ts';

export interface ProviderThreadData {
  /** The LLM client's options (the logger is the thread's own). */
  llm: OpenAiLlmOptions;
  /** The configured ASR, when its provider runs in the provider thread (`runsIn`). */
  asr?: AsrOptions;
}

export type ToProvider =
  | { op: 'llm'; rid: number; messages: ChatMessage[]; tools: ToolSpec[] }
  | { op: 'asr'; rid: number; pcm: Int16Array; sampleRate: number }
  /** The caller stopped waiting (turn aborted, consumer gone): the request is cancelled. */
  | { op: 'abort'; rid: number }
  /** Tests only: makes the thread throw from its message handler (a crash). */
  | { op: 'crash' };

export type FromProvider =
  | { op: 'ready' }
  | { op: 'event'; rid: number; ev: LlmEvent }
  | { op: 'end'; rid: number }
  | { op: 'text'; rid: number; text: string }
  | { op: 'error'; rid: number; code: string; message: string; retryable: boolean }
  | { op: 'log'; rec: ThreadLogRecord };
