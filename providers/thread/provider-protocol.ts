/**
 * @module What the provider thread (providers/thread/) serves the main thread, over the worker RPC
 * of `core/worker-rpc.ts`: an LLM request answered by its events, an ASR request by its text.
 * Either may fail with a `VoiceError` whose code crosses the thread.
 */
import type { AsrOptions } from '../index.ts';
import type { OpenAiLlmOptions } from '../openai/options.ts';
import type { ChatMessage, LlmEvent } from '../../llm/types.ts';
import type { ToolSpec } from '../../mcp/tool-source.ts';

export interface ProviderThreadData {
  /** The LLM client's options (the logger is the thread's own). */
  llm: OpenAiLlmOptions;
  /** The configured ASR, when its provider runs in the provider thread (`runsIn`). */
  asr?: AsrOptions;
}

export interface ProviderApi {
  llm: { params: { messages: ChatMessage[]; tools: ToolSpec[] }; result: void; item: LlmEvent };
  /** The PCM is copied, not transferred: the caller still owns the utterance. */
  asr: { params: { pcm: Int16Array; sampleRate: number }; result: string };
}
