/**
 * @module The provider thread, main side: an `LlmClient` and (when configured) an OpenAI-compatible
 * `Asr` whose work happens on a worker thread (provider-worker.ts). Callers see the same interfaces,
 * errors and cancellation as with the in-process clients; what moves is the HTTP client, SSE parsing
 * and multipart encoding, which under a burst of turns held the main thread for tens of ms at a time
 * and made downlink frames late.
 *
 * A thread that dies fails the requests in flight (provider_failed: the turn apologises) and is
 * replaced at once; requests made later go to the new thread (`core/worker-rpc.ts`).
 */
import type { Asr } from '../../audio/asr/asr.ts';
import { throwIfAborted } from '../../core/abort.ts';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import { startModuleWorker } from '../../core/start-worker.ts';
import { WorkerRpc, type WorkerObserver } from '../../core/worker-rpc.ts';
import { stableKey } from '../../core/stable-key.ts';
import type { LlmClient, LlmEvent, LlmStreamRequest } from '../../llm/types.ts';
import type { AsrOptions } from '../registry/registry.ts';
import type { OpenAiLlmOptions } from '../openai/options.ts';
import type { ProviderApi, ProviderClientStats, ProviderThreadData } from './provider-protocol.ts';

export interface ProviderThread {
  readonly llm: LlmClient;
  /** The configured OpenAI-compatible ASR, served by the thread; undefined when another ASR is used. */
  readonly asr: Asr | undefined;
  /**
   * An LLM client with these options, served by the thread (which makes it on first use and
   * keeps a bounded number): the configured `llm` when the options are the configured ones.
   */
  llmFor(options: OpenAiLlmOptions): LlmClient;
  /** An ASR with these options (a provider that runs in the provider thread), like `llmFor`. */
  asrFor(options: AsrOptions): Asr;
  /** Clients the thread has made and keeps now. */
  clients(): Promise<ProviderClientStats>;
  /** Times the thread died and was replaced. */
  readonly restarts: number;
  /** Ends the thread; requests in flight fail. */
  close(): Promise<void>;
}

export interface ProviderThreadOptions {
  /** Sees the thread's Worker each time one starts (label `provider thread`). */
  onWorker?: WorkerObserver;
}

class ProviderThreadImpl implements ProviderThread {
  readonly llm: LlmClient;
  readonly asr: Asr | undefined;
  readonly rpc: WorkerRpc<ProviderApi>;
  readonly #llmKey: string;
  readonly #asrKey: string | undefined;

  constructor(data: ProviderThreadData, log: Logger, opts: ProviderThreadOptions) {
    this.#llmKey = stableKey(data.llm);
    this.#asrKey = data.asr ? stableKey(data.asr) : undefined;
    this.rpc = new WorkerRpc<ProviderApi>({
      label: 'provider thread',
      start: () => startModuleWorker(import.meta.url, './provider-worker', { workerData: data, name: 'providers' }),
      log,
      lostCode: ErrorCode.ProviderFailed,
      onLost: () => log.warn({ restarts: this.rpc.restarts }, 'provider thread exited; starting a new one'),
      ...(opts.onWorker ? { onWorker: opts.onWorker } : {}),
    });
    this.llm = { model: data.llm.model, stream: (req) => this.#streamLlm(req, undefined) };
    this.asr = data.asr
      ? { name: data.asr.provider, transcribe: (pcm, o) => this.#transcribe(pcm, o, undefined), close: async () => {} }
      : undefined;
  }

  llmFor(options: OpenAiLlmOptions): LlmClient {
    if (stableKey(options) === this.#llmKey) return this.llm;
    return { model: options.model, stream: (req) => this.#streamLlm(req, options) };
  }

  asrFor(options: AsrOptions): Asr {
    if (this.asr && stableKey(options) === this.#asrKey) return this.asr;
    return { name: options.provider, transcribe: (pcm, o) => this.#transcribe(pcm, o, options), close: async () => {} };
  }

  clients(): Promise<ProviderClientStats> {
    return this.rpc.request('clients', {});
  }

  get restarts(): number {
    return this.rpc.restarts;
  }

  // Aborted, or the consumer stopped reading: the thread cancels the HTTP request.
  // `options`: the client's, sent with each request (a few hundred bytes), so a replaced thread
  // makes it again on first use; undefined: the configured one.
  async *#streamLlm(req: LlmStreamRequest, options: OpenAiLlmOptions | undefined): AsyncGenerator<LlmEvent> {
    throwIfAborted(req.signal);
    const params = { messages: req.messages, tools: req.tools };
    yield* this.rpc.stream('llm', options ? { ...params, options } : params, { signal: req.signal });
  }

  #transcribe(
    pcm: Int16Array,
    opts: { signal: AbortSignal; sampleRate: number },
    options: AsrOptions | undefined,
  ): Promise<string> {
    throwIfAborted(opts.signal);
    // Copied by structured clone, not transferred: the caller still owns the utterance.
    const params = { pcm, sampleRate: opts.sampleRate };
    return this.rpc.request('asr', options ? { ...params, options } : params, { signal: opts.signal });
  }

  close(): Promise<void> {
    return this.rpc.close(new VoiceError(ErrorCode.ProviderUnavailable, 'the server is shutting down'));
  }
}

/** Starts the provider thread; rejects when it cannot load (bad install), before any device connects. */
export async function startProviderThread(
  data: ProviderThreadData,
  log: Logger,
  opts: ProviderThreadOptions = {},
): Promise<ProviderThread> {
  const thread = new ProviderThreadImpl(data, log, opts);
  try {
    await thread.rpc.start();
  } catch (err) {
    await thread.close();
    throw err;
  }
  return thread;
}
