/**
 * @module The provider thread, main side: an `LlmClient` and (when configured) an OpenAI-compatible
 * `Asr` whose work happens on a worker thread (provider-worker.ts). Callers see the same interfaces,
 * errors and cancellation as with the in-process clients; what moves is the HTTP client, SSE parsing
 * and multipart encoding, which under a burst of turns held the main thread for tens of ms at a time
 * and made downlink frames late.
 *
 * A thread that dies fails the requests in flight (provider_failed: the turn apologises) and is
 * replaced at once; requests made later go to the new thread.
 */
import type { Worker } from 'node:worker_threads';
import type { Asr } from '../../audio/asr/asr.ts';
import { throwIfAborted } from '../../core/abort.ts';
import { AsyncQueue } from '../../core/async-queue.ts';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import { startModuleWorker } from '../../core/start-worker.ts';
import type { LlmClient, LlmEvent, LlmStreamRequest } from '../../llm/types.ts';
import type { FromProvider, ProviderThreadData, ToProvider } from './provider-protocol.ts';

/** A thread that dies before it was ever ready is restarted after this long, not in a tight loop. */
const RESTART_DELAY_MS = 1000;

type Reply = Exclude<FromProvider, { op: 'ready' } | { op: 'log' }>;

interface Pending {
  onReply(m: Reply): void;
  onLost(err: VoiceError): void;
}

export interface ProviderThread {
  readonly llm: LlmClient;
  /** The configured OpenAI-compatible ASR, served by the thread; undefined when another ASR is used. */
  readonly asr: Asr | undefined;
  /** Times the thread died and was replaced. */
  readonly restarts: number;
  /** Tests only: makes the thread crash. */
  crashForTest(): void;
  /** Ends the thread; requests in flight fail. */
  close(): Promise<void>;
}

class ProviderThreadImpl implements ProviderThread {
  readonly llm: LlmClient;
  readonly asr: Asr | undefined;
  restarts = 0;
  readonly #data: ProviderThreadData;
  readonly #log: Logger;
  readonly #pending = new Map<number, Pending>();
  #worker: Worker | undefined;
  #nextRid = 1;
  #closed = false;
  #restartTimer: NodeJS.Timeout | undefined;

  constructor(data: ProviderThreadData, log: Logger) {
    this.#data = data;
    this.#log = log;
    this.llm = { model: data.llm.model, stream: (req) => this.#streamLlm(req) };
    this.asr = data.asr ? { name: 'openai', transcribe: (pcm, o) => this.#transcribe(pcm, o), close: async () => {} } : undefined;
  }

  /** Starts a thread; resolves once it has loaded its clients. */
  start(): Promise<void> {
    const worker = startModuleWorker(import.meta.url, './provider-worker', { workerData: this.#data, name: 'providers' });
    this.#worker = worker;
    let ready = false;
    return new Promise<void>((resolve, reject) => {
      worker.on('message', (m: FromProvider) => {
        if (m.op === 'ready') {
          ready = true;
          resolve();
        } else if (m.op === 'log') {
          const { level, obj, msg, bindings } = m.rec;
          this.#log[level]({ ...bindings, ...obj }, msg);
        } else {
          this.#pending.get(m.rid)?.onReply(m);
        }
      });
      worker.on('error', (err) => this.#log.error({ err: err.message }, 'provider thread failed'));
      worker.on('exit', (code) => {
        if (this.#worker === worker) this.#worker = undefined;
        const err = new VoiceError(ErrorCode.ProviderFailed, `provider thread exited with code ${code}`);
        reject(err);
        this.#failAll(this.#closed ? new VoiceError(ErrorCode.ProviderUnavailable, 'the server is shutting down') : err);
        if (this.#closed) return;
        this.restarts++;
        this.#log.warn({ code, restarts: this.restarts }, 'provider thread exited; starting a new one');
        const restart = (): void => {
          this.#restartTimer = undefined;
          if (!this.#closed) this.start().catch(() => {});
        };
        if (ready) restart();
        else this.#restartTimer = setTimeout(restart, RESTART_DELAY_MS);
      });
    });
  }

  #failAll(err: VoiceError): void {
    const all = [...this.#pending.values()];
    this.#pending.clear();
    for (const p of all) p.onLost(err);
  }

  /** Posts a request; false when no thread is running (between a crash and its replacement). */
  #post(m: ToProvider): boolean {
    if (!this.#worker) return false;
    this.#worker.postMessage(m);
    return true;
  }

  crashForTest(): void {
    this.#post({ op: 'crash' });
  }

  async *#streamLlm(req: LlmStreamRequest): AsyncGenerator<LlmEvent> {
    throwIfAborted(req.signal);
    const rid = this.#nextRid++;
    const events = new AsyncQueue<LlmEvent>();
    let settled = false;
    this.#pending.set(rid, {
      onReply: (m) => {
        if (m.op === 'event') return events.push(m.ev);
        settled = true;
        this.#pending.delete(rid);
        if (m.op === 'end') events.close();
        else if (m.op === 'error') events.fail(new VoiceError(m.code as ErrorCode, m.message, { retryable: m.retryable }));
      },
      onLost: (err) => {
        settled = true;
        events.fail(err);
      },
    });
    const onAbort = (): void => events.fail(new VoiceError(ErrorCode.Aborted, 'aborted', { cause: req.signal.reason }));
    req.signal.addEventListener('abort', onAbort, { once: true });
    try {
      if (!this.#post({ op: 'llm', rid, messages: req.messages, tools: req.tools })) {
        throw new VoiceError(ErrorCode.ProviderUnavailable, 'the provider thread is restarting', { retryable: true });
      }
      yield* events;
    } finally {
      req.signal.removeEventListener('abort', onAbort);
      this.#pending.delete(rid);
      // Aborted, or the consumer stopped reading: the thread cancels the HTTP request.
      if (!settled) this.#post({ op: 'abort', rid });
    }
  }

  #transcribe(pcm: Int16Array, opts: { signal: AbortSignal; sampleRate: number }): Promise<string> {
    throwIfAborted(opts.signal);
    const rid = this.#nextRid++;
    return new Promise<string>((resolve, reject) => {
      const finish = (): void => {
        this.#pending.delete(rid);
        opts.signal.removeEventListener('abort', onAbort);
      };
      const onAbort = (): void => {
        finish();
        this.#post({ op: 'abort', rid });
        reject(new VoiceError(ErrorCode.Aborted, 'aborted', { cause: opts.signal.reason }));
      };
      this.#pending.set(rid, {
        onReply: (m) => {
          finish();
          if (m.op === 'text') resolve(m.text);
          else if (m.op === 'error') reject(new VoiceError(m.code as ErrorCode, m.message, { retryable: m.retryable }));
          else reject(new VoiceError(ErrorCode.Internal, `unexpected provider reply ${m.op}`));
        },
        onLost: (err) => {
          finish();
          reject(err);
        },
      });
      opts.signal.addEventListener('abort', onAbort, { once: true });
      // Copied by structured clone, not transferred: the caller still owns the utterance.
      if (!this.#post({ op: 'asr', rid, pcm, sampleRate: opts.sampleRate })) {
        finish();
        reject(new VoiceError(ErrorCode.ProviderUnavailable, 'the provider thread is restarting', { retryable: true }));
      }
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#restartTimer);
    const w = this.#worker;
    this.#worker = undefined;
    this.#failAll(new VoiceError(ErrorCode.ProviderUnavailable, 'the server is shutting down'));
    if (w) await w.terminate();
  }
}

/** Starts the provider thread; rejects when it cannot load (bad install), before any device connects. */
export async function startProviderThread(data: ProviderThreadData, log: Logger): Promise<ProviderThread> {
  const thread = new ProviderThreadImpl(data, log);
  await thread.start();
  return thread;
}
