/**
 * @module The chat model client: streaming chat completions with tool calls over the openai SDK,
 * against any OpenAI-compatible endpoint (OpenAI, Azure's OpenAI-compatible `/openai/v1`, Ollama,
 * vLLM, ...).
 *
 * `timeoutMs` is the longest silence allowed (before the first chunk and between chunks), and a
 * retryable failure is retried only while nothing has been yielded yet: a retry after spoken text
 * would repeat it. Both are ours, not the SDK's (`client.ts`). Every chunk is validated
 * (`chat-chunk.ts`) before it is read.
 */
import type { ChatCompletionCreateParamsStreaming } from 'openai/resources/chat/completions';
import type { z } from 'zod';
import { linkedScope, sleep, throwIfAborted } from '../../core/abort.ts';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import type { LlmClient, LlmEvent, LlmStreamRequest, LlmUsage } from '../../llm/types.ts';
import { parseChatChunk } from './chat-chunk.ts';
import { createOpenAiClient } from './client.ts';
import { mapOpenAiError, retryAfterMs } from './errors.ts';
import { OpenAiLlmSchema, type OpenAiLlmOptions } from './options.ts';
import { toOpenAiMessages, toOpenAiTools } from './to-openai.ts';
import { createToolCallAccumulator } from './tool-call-accumulator.ts';

/** First retry waits this long, doubling each time up to `MAX_BACKOFF_MS` (a voice turn cannot wait longer). */
const BASE_BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 2000;

/** Wait before retry `attempt` (0-based); undefined when the server asks for more than we can afford. */
function backoffMs(attempt: number, serverAsked: number | undefined): number | undefined {
  if (serverAsked !== undefined) return serverAsked <= MAX_BACKOFF_MS ? serverAsked : undefined;
  const base = Math.min(MAX_BACKOFF_MS, BASE_BACKOFF_MS * 2 ** attempt);
  return Math.round(base * (0.75 + Math.random() * 0.5));
}

/**
 * Creates a client; no request is made until `stream` is iterated. Unset options take the
 * schema's defaults (the configuration's `llm` block is made of the same schema).
 */
export function createLlmClient(options: z.input<typeof OpenAiLlmSchema>, log: Logger): LlmClient {
  const opts: OpenAiLlmOptions = OpenAiLlmSchema.parse(options);
  const { timeoutMs, maxRetries } = opts;
  const sdk = createOpenAiClient({ baseURL: opts.baseURL, apiKey: opts.apiKey, headers: opts.headers });

  function buildBody(req: LlmStreamRequest): ChatCompletionCreateParamsStreaming {
    const body: Record<string, unknown> = {
      model: opts.model,
      messages: toOpenAiMessages(req.messages),
      stream: true,
      stream_options: { include_usage: true },
    };
    if (opts.temperature !== undefined) body.temperature = opts.temperature;
    if (req.tools.length > 0) body.tools = toOpenAiTools(req.tools);
    // extraBody holds provider-specific fields the SDK's types do not know.
    return { ...body, ...opts.extraBody, stream: true } as ChatCompletionCreateParamsStreaming;
  }

  /** One HTTP attempt. Aborting `parent` or the idle timer aborts the request and frees the socket. */
  async function* attempt(body: ChatCompletionCreateParamsStreaming, parent: AbortSignal): AsyncGenerator<LlmEvent> {
    // The request's scope: the turn's abort reaches it, and so does our idle timer.
    const scope = linkedScope(parent);
    let timedOut = false;
    let timer: NodeJS.Timeout | undefined;
    const arm = (): void => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        timedOut = true;
        scope.abort();
      }, timeoutMs);
    };
    const disarm = (): void => clearTimeout(timer);
    const stopped = (): VoiceError =>
      timedOut
        ? new VoiceError(ErrorCode.Timeout, `LLM sent nothing for ${timeoutMs} ms`, { retryable: true })
        : new VoiceError(ErrorCode.Aborted, 'aborted', { cause: parent.reason });
    arm();
    try {
      const stream = await sdk.chat.completions.create(body, { signal: scope.signal });
      arm();
      const calls = createToolCallAccumulator();
      let finishReason = 'stop';
      let usage: LlmUsage | undefined;
      for await (const raw of stream) {
        arm();
        const chunk = parseChatChunk(raw);
        if (chunk.usage) usage = chunk.usage;
        const choice = chunk.choices?.[0];
        if (!choice) continue;
        for (const tc of choice.delta?.tool_calls ?? []) calls.add(tc);
        if (choice.finish_reason) finishReason = choice.finish_reason;
        const text = choice.delta?.content;
        if (text) {
          // The idle timer must not run while the consumer works on the delta.
          disarm();
          yield { type: 'text_delta', text };
          arm();
        }
      }
      // The SDK ends iteration quietly when its signal aborts: tell that apart from a real end.
      if (scope.signal.aborted) throw stopped();
      disarm();
      const all = calls.calls();
      if (all.length > 0) yield { type: 'tool_calls', calls: all };
      yield usage ? { type: 'done', finishReason, usage } : { type: 'done', finishReason };
    } catch (err) {
      if (scope.signal.aborted) throw stopped();
      throw err;
    } finally {
      disarm();
      // Also reached when the consumer stops iterating early: closes the HTTP response, and
      // unhooks the scope from the turn's signal.
      scope.abort();
    }
  }

  async function* stream(req: LlmStreamRequest): AsyncGenerator<LlmEvent> {
    throwIfAborted(req.signal);
    const body = buildBody(req);
    for (let tries = 0; ; tries++) {
      let yielded = false;
      const started = performance.now();
      try {
        log.debug(
          { model: opts.model, messages: req.messages.length, tools: req.tools.length, attempt: tries + 1 },
          'llm request',
        );
        for await (const ev of attempt(body, req.signal)) {
          yielded = true;
          yield ev;
        }
        return;
      } catch (raw) {
        const err = mapOpenAiError(raw, 'LLM');
        if (err.code === ErrorCode.Aborted || req.signal.aborted)
          throw new VoiceError(ErrorCode.Aborted, 'aborted', { cause: req.signal.reason });
        const wait = !yielded && err.retryable && tries < maxRetries ? backoffMs(tries, retryAfterMs(err)) : undefined;
        const ms = Math.round(performance.now() - started);
        if (wait === undefined) {
          log.warn({ code: err.code, attempt: tries + 1, ms, err: err.message }, 'llm request failed');
          throw err;
        }
        log.warn(
          { code: err.code, attempt: tries + 1, ms, waitMs: wait, err: err.message },
          'llm request failed, retrying',
        );
        await sleep(wait, req.signal);
      }
    }
  }

  return { model: opts.model, stream };
}
