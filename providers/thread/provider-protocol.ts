/**
 * @module What the provider thread (providers/thread/) serves the main thread, over the worker RPC
 * of `core/worker-rpc.ts`: an LLM request answered by its events, an ASR request by its text.
 * Either may fail with a `VoiceError` whose code crosses the thread. A request names the options
 * of the client it wants (an agent's own model or recogniser); without them, the configured one.
 */
import type { AsrOptions } from '../registry/registry.ts';
import type { OpenAiLlmOptions } from '../openai/options.ts';
import type { ChatMessage, LlmEvent } from '../../llm/types.ts';
import type { ToolSpec } from '../../mcp/contract/tool-source.ts';

export interface ProviderThreadData {
  /** The configured LLM client's options (the logger is the thread's own). */
  llm: OpenAiLlmOptions;
  /** The configured ASR, when its provider runs in the provider thread (`runsIn`). */
  asr?: AsrOptions;
  /** Clients kept for other options (agents' own), per kind; the least recently used is dropped past it. Default 16. */
  maxClients?: number;
}

/** How many clients the thread has made and keeps, per kind. */
export interface ProviderClientStats {
  llm: { created: number; kept: number };
  asr: { created: number; kept: number };
}

export interface ProviderApi {
  llm: {
    params: { options?: OpenAiLlmOptions; messages: ChatMessage[]; tools: ToolSpec[] };
    result: void;
    item: LlmEvent;
  };
  /** The PCM is copied, not transferred: the caller still owns the utterance. */
  asr: { params: { options?: AsrOptions; pcm: Int16Array; sampleRate: number }; result: string };
  clients: { params: Record<string, never>; result: ProviderClientStats };
}
