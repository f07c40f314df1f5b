/**
 * @module The chat model client: streaming chat completions with tool calls against any
 * OpenAI-compatible endpoint (OpenAI, Ollama, vLLM, ...), over `core/openai-wire.ts`.
 *
 * `timeoutMs` is the longest silence allowed (before the first chunk and between chunks), and a
 * retryable failure is retried only while nothing has been yielded yet: a retry after spoken text
 * would repeat it. Every chunk is validated (`stream-chunk.ts`) before it is read.
 */
import { linkedScope, sleep, throwIfAborted } from '../core/abort.ts';
import { createWireClient, sseJson } from '../core/openai-wire.ts';
import { ErrorCode, VoiceError } from '../core/errors.ts';
import type { Logger } from '../core/logger.ts';
import { mapLlmError, retryAfterMs } from './errors.ts';
import { parseChatChunk } from './stream-chunk.ts';
import { toOpenAiMessages, toOpenAiTools } from './to-openai.ts';
import { createToolCallAccumulator } from './tool-call-accumulator.ts';
import type { LlmClient, LlmEvent, LlmStreamRequest, LlmUsage } from './types.ts';

export interface LlmClientOptions {
  /** Base URL including the version path, e.g. `http://127.0.0.1:11434/v1`. */
  baseURL: string;
  /** Empty for endpoints without auth (local Ollama): no Authorization header is sent then. */
  apiKey: string;
  model: string;
  /** Longest wait for the first chunk and between chunks, in ms. Default 30000. */
  timeoutMs?: number;
  /** Retries of retryable failures (5xx, 429, timeout, unreachable) before the first delta. Default 2. */
  maxRetries?: number;
  /** Extra HTTP headers on every request. */
  headers?: Record<string, string>;
  /** Extra body fields merged into every request (e.g. `max_tokens`, `top_p`, provider switches). */
  extraBody?: Record<string, unknown>;
  temperature?: number;
  log: Logger;
}

/** First retry waits this long, doubling each time up to `MAX_BACKOFF_MS` (a voice turn cannot wait longer). */
const BASE_BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 2000;

/** Wait before retry `attempt` (0-based); undefined when the server asks for more than we can afford. */
function backoffMs(attempt: number, serverAsked: number | undefined): number | undefined {
  if (serverAsked !== undefined) return serverAsked <= MAX_BACKOFF_MS ? serverAsked : undefined;
  const base = Math.min(MAX_BACKOFF_MS, BASE_BACKOFF_MS * 2 ** attempt);
  return Math.round(base * (0.75 + Math.random() * 0.5));
}

/** Creates a client; no request is made until `stream` is iterated. */
export function createLlmClient(opts: LlmClientOptions): LlmClient {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const maxRetries = opts.maxRetries ?? 2;
  const log = opts.log;
  const wire = createWireClient({ baseURL: opts.baseURL, apiKey: opts.apiKey, ...(opts.headers ? { headers: opts.headers } : {}) });

  function buildBody(req: LlmStreamRequest): Record<string, unknown> {
    const body: Record<string, unknown> = {
      model: opts.model,
      messages: toOpenAiMessages(req.messages),
      stream: true,
      stream_options: { include_usage: true },
    };
    if (opts.temperature !== undefined) body.temperature = opts.temperature;
    if (req.tools.length > 0) body.tools = toOpenAiTools(req.tools);
    return { ...body, ...opts.extraBody, stream: true };
  }

  /** One HTTP attempt. Aborting `parent` or the idle timer aborts the request and frees the socket. */
  async function* attempt(body: Record<string, unknown>, parent: AbortSignal): AsyncGenerator<LlmEvent> {
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
      const res = await wire.post('/chat/completions', { json: body }, { signal: scope.signal, accept: 'text/event-stream' });
      arm();
      const calls = createToolCallAccumulator();
      let finishReason = 'stop';
      let usage: LlmUsage | undefined;
      for await (const raw of sseJson(res)) {
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
        log.debug({ model: opts.model, messages: req.messages.length, tools: req.tools.length, attempt: tries + 1 }, 'llm request');
        for await (const ev of attempt(body, req.signal)) {
          yielded = true;
          yield ev;
        }
        return;
      } catch (raw) {
        const err = mapLlmError(raw);
        if (err.code === ErrorCode.Aborted || req.signal.aborted) throw new VoiceError(ErrorCode.Aborted, 'aborted', { cause: req.signal.reason });
        const wait = !yielded && err.retryable && tries < maxRetries ? backoffMs(tries, retryAfterMs(err)) : undefined;
        const ms = Math.round(performance.now() - started);
        if (wait === undefined) {
          log.warn({ code: err.code, attempt: tries + 1, ms, err: err.message }, 'llm request failed');
          throw err;
        }
        log.warn({ code: err.code, attempt: tries + 1, ms, waitMs: wait, err: err.message }, 'llm request failed, retrying');
        await sleep(wait, req.signal);
      }
    }
  }

  return { model: opts.model, stream };
}
