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
import type { LlmClient, LlmEvent, LlmStreamRequest } from '../../llm/types.ts';
import type { ProviderApi, ProviderThreadData } from './provider-protocol.ts';

export interface ProviderThread {
  readonly llm: LlmClient;
  /** The configured OpenAI-compatible ASR, served by the thread; undefined when another ASR is used. */
  readonly asr: Asr | undefined;
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

  constructor(data: ProviderThreadData, log: Logger, opts: ProviderThreadOptions) {
    this.rpc = new WorkerRpc<ProviderApi>({
      label: 'provider thread',
      start: () => startModuleWorker(import.meta.url, './provider-worker', { workerData: data, name: 'providers' }),
      log,
      lostCode: ErrorCode.ProviderFailed,
      onLost: () => log.warn({ restarts: this.rpc.restarts }, 'provider thread exited; starting a new one'),
      ...(opts.onWorker ? { onWorker: opts.onWorker } : {}),
    });
    this.llm = { model: data.llm.model, stream: (req) => this.#streamLlm(req) };
    this.asr = data.asr ? { name: 'openai', transcribe: (pcm, o) => this.#transcribe(pcm, o), close: async () => {} } : undefined;
  }

  get restarts(): number {
    return this.rpc.restarts;
  }

  // Aborted, or the consumer stopped reading: the thread cancels the HTTP request.
  async *#streamLlm(req: LlmStreamRequest): AsyncGenerator<LlmEvent> {
    throwIfAborted(req.signal);
    yield* this.rpc.stream('llm', { messages: req.messages, tools: req.tools }, { signal: req.signal });
  }

  #transcribe(pcm: Int16Array, opts: { signal: AbortSignal; sampleRate: number }): Promise<string> {
    throwIfAborted(opts.signal);
    // Copied by structured clone, not transferred: the caller still owns the utterance.
    return this.rpc.request('asr', { pcm, sampleRate: opts.sampleRate }, { signal: opts.signal });
  }

  close(): Promise<void> {
    return this.rpc.close(new VoiceError(ErrorCode.ProviderUnavailable, 'the server is shutting down'));
  }
}

/** Starts the provider thread; rejects when it cannot load (bad install), before any device connects. */
export async function startProviderThread(data: ProviderThreadData, log: Logger, opts: ProviderThreadOptions = {}): Promise<ProviderThread> {
  const thread = new ProviderThreadImpl(data, log, opts);
  try {
    await thread.rpc.start();
  } catch (err) {
    await thread.close();
    throw err;
  }
  return thread;
}
