/**
 * @module The model-side types shared by the client, history and ReAct loop. `ChatMessage` is our
 * own shape (not the wire's) so history and tests never depend on it; providers/openai/to-openai.ts
 * converts it at the edge.
 */
import type { ToolSpec } from '../mcp/contract/tool-source.ts';

/** One tool call the model asked for. `arguments` is the raw JSON text the model produced (it may be malformed). */
export interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}

export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; toolCalls?: ToolCall[] }
  | { role: 'tool'; toolCallId: string; content: string };

export interface LlmUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

/**
 * What `LlmClient.stream` yields: text as it arrives, then (if any) all tool calls of the round at
 * once (their argument deltas are accumulated inside the client), then `done`.
 */
export type LlmEvent =
  | { type: 'text_delta'; text: string }
  | { type: 'tool_calls'; calls: ToolCall[] }
  | { type: 'done'; finishReason: string; usage?: LlmUsage };

export interface LlmStreamRequest {
  messages: ChatMessage[];
  /** Tools offered this round; empty means none (the request then carries no `tools`). */
  tools: ToolSpec[];
  signal: AbortSignal;
}

export interface LlmClient {
  /** The model name requests are sent for. */
  readonly model: string;
  /**
   * Streams one chat completion. Throws `VoiceError` (codes: aborted, timeout, provider_unavailable,
   * provider_rejected, provider_failed, rate_limited). Retryable failures are retried only before
   * the first event has been yielded.
   */
  stream(req: LlmStreamRequest): AsyncIterable<LlmEvent>;
}
