/**
 * @module One worker thread as an RPC endpoint, main side: starts the worker, waits for its
 * `ready` (calls made before that are queued, then sent), re-logs its log records through the
 * main logger, carries the calls of `worker-rpc-peer.ts` both ways, and keeps a worker running:
 * one that dies unasked fails exactly the calls in flight with one error and is replaced, at once
 * if it had been ready, after a delay if it never loaded (so a broken install does not spin).
 * Calls made between a death and the replacement fail as retryable `provider_unavailable`.
 */
import type { Worker } from 'node:worker_threads';
import { ErrorCode, VoiceError } from './errors.ts';
import type { Logger } from './logger.ts';
import type { ThreadLogRecord } from './thread-logger.ts';
import {
  fromRpcError,
  RpcPeer,
  type RpcApi,
  type RpcCallOptions,
  type RpcHandlers,
  type RpcItem,
  type RpcMessage,
  type RpcMethod,
  type RpcParams,
  type RpcResult,
} from './worker-rpc-peer.ts';

/** Sees each worker thread as it starts, by its label (an operator's tooling; tests end one to crash it). */
export type WorkerObserver = (worker: Worker, label: string) => void;

/** A worker that dies before it was ever ready is replaced after this long, not in a tight loop. */
const RESTART_DELAY_MS = 1000;
/** A worker asked to exit gets this long (it finishes the work it is in) before it is terminated. */
const EXIT_GRACE_MS = 3000;

export interface WorkerRpcOptions<Local extends RpcApi<Local>> {
  /** Names the worker in log lines and errors ('provider thread', 'media worker 0'). */
  label: string;
  /** Starts one worker (a `startModuleWorker` call). */
  start(): Worker;
  log: Logger;
  /**
   * The logger a worker's record goes through (`log` when this gives none): lets a record that belongs to one
   * client (its bindings say which) count against that client's own log limit.
   */
  logFor?(rec: ThreadLogRecord): Logger | undefined;
  /** Code of the error that fails the calls in flight when the worker dies. Default `internal`. */
  lostCode?: ErrorCode;
  /** The calls the worker may make of this thread. */
  handlers?: RpcHandlers<Local>;
  /** A worker died unasked: its calls have failed with `err`; its replacement starts next. */
  onLost?(err: VoiceError): void;
  /** A worker has exited, asked or not (release what this thread holds for it). */
  onExit?(): void;
  onWorker?: WorkerObserver;
}

export class WorkerRpc<Remote extends RpcApi<Remote>, Local extends RpcApi<Local> = Record<never, RpcMethod>> {
  readonly #opts: WorkerRpcOptions<Local>;
  #worker: Worker | undefined;
  #peer: RpcPeer<Remote, Local> | undefined;
  #ready = false;
  /** A worker has been ready once: from then on a dead one is replaced (a first that cannot load is not). */
  #started = false;
  /** Set by `close`: the worker's exit is not a death, and the error calls fail with. */
  #closed: VoiceError | undefined;
  #restartTimer: NodeJS.Timeout | undefined;
  #restarts = 0;

  constructor(opts: WorkerRpcOptions<Local>) {
    this.#opts = opts;
  }

  /** Workers that died unasked (each was replaced). */
  get restarts(): number {
    return this.#restarts;
  }

  /** A worker is running and serving calls. */
  get ready(): boolean {
    return this.#ready;
  }

  /** A worker is running or loading (calls are accepted). */
  get alive(): boolean {
    return this.#peer !== undefined;
  }

  /** Calls sent to the current worker and not answered yet. */
  get pending(): number {
    return this.#peer?.pending ?? 0;
  }

  /** Starts the first worker; resolves once it is ready, rejects if it cannot load (then `close` it). */
  start(): Promise<void> {
    return this.#spawn();
  }

  request<K extends keyof Remote & string>(
    method: K,
    params: RpcParams<Remote, K>,
    opts?: RpcCallOptions,
  ): Promise<RpcResult<Remote, K>> {
    return this.#peerOrFail().request(method, params, opts);
  }

  stream<K extends keyof Remote & string>(
    method: K,
    params: RpcParams<Remote, K>,
    opts?: RpcCallOptions,
  ): AsyncGenerator<RpcItem<Remote, K>> {
    return this.#peerOrFail().stream(method, params, opts);
  }

  notify<K extends keyof Remote & string>(
    method: K,
    params: RpcParams<Remote, K>,
    transfer?: readonly ArrayBuffer[],
  ): void {
    this.#peer?.notify(method, params, transfer);
  }

  /**
   * Ends the worker; calls in flight fail with `err`. It is asked first, so it exits between two
   * pieces of work, and terminated only if it has not within `graceMs`: terminating a worker
   * inside a native addon (the Opus encoder) can abort the whole process.
   */
  async close(err: VoiceError, graceMs = EXIT_GRACE_MS): Promise<void> {
    this.#closed ??= err;
    clearTimeout(this.#restartTimer);
    this.#peer?.close(err);
    const worker = this.#worker;
    if (!worker) return;
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    worker.postMessage({ rpc: 'exit' } satisfies RpcMessage);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), graceMs);
    });
    const outcome = await Promise.race([exited, late]);
    clearTimeout(timer);
    if (outcome === 'late') {
      this.#opts.log.warn({ graceMs }, `${this.#opts.label} did not exit when asked; terminating it`);
      await worker.terminate();
    }
  }

  #peerOrFail(): RpcPeer<Remote, Local> {
    if (this.#peer) return this.#peer;
    const { label } = this.#opts;
    // A peer closed at once: the call fails with the reason, the same way as one in flight.
    const gone = new RpcPeer<Remote, Local>(() => {}, this.#opts.log);
    gone.close(
      this.#closed ?? new VoiceError(ErrorCode.ProviderUnavailable, `the ${label} is restarting`, { retryable: true }),
    );
    return gone;
  }

  #spawn(): Promise<void> {
    const { label, log } = this.#opts;
    const worker = this.#opts.start();
    /** Calls (and notifications, cancels) made before the worker is ready, sent when it is. */
    let queued: Array<[RpcMessage, readonly ArrayBuffer[]]> | undefined = [];
    const peer = new RpcPeer<Remote, Local>(
      (m, transfer) => {
        // Answers to the worker's own calls (it may call while loading) go at once.
        const ours = m.rpc === 'call' || m.rpc === 'notify' || m.rpc === 'cancel';
        if (queued && ours) queued.push([m, transfer]);
        else worker.postMessage(m, [...transfer]);
      },
      log,
      this.#opts.handlers,
    );
    this.#worker = worker;
    this.#peer = peer;
    this.#opts.onWorker?.(worker, label);
    let loadError: VoiceError | undefined;
    return new Promise<void>((resolve, reject) => {
      worker.on('message', (m: RpcMessage) => {
        // The worker's log records go through this thread's logger, its bindings in the line.
        if (m.rpc === 'log')
          (this.#opts.logFor?.(m.rec) ?? log)[m.rec.level]({ ...m.rec.bindings, ...m.rec.obj }, m.rec.msg);
        else if (m.rpc === 'ready') {
          this.#ready = true;
          this.#started = true;
          for (const [q, transfer] of queued ?? []) worker.postMessage(q, [...transfer]);
          queued = undefined;
          resolve();
        } else if (m.rpc === 'loadFailed') {
          loadError = fromRpcError(m.error);
          log.error({ err: loadError.message }, `${label} could not load`);
          void worker.terminate();
        } else peer.receive(m);
      });
      worker.on('error', (err) => log.error({ err: err.message }, `${label} failed`));
      worker.on('exit', (code) => {
        const wasReady = this.#ready;
        this.#ready = false;
        this.#worker = undefined;
        this.#peer = undefined;
        // A worker that could not load fails the calls queued for it with the reason.
        const err =
          this.#closed ??
          loadError ??
          new VoiceError(this.#opts.lostCode ?? ErrorCode.Internal, `${label} exited with code ${code}`);
        peer.close(err);
        reject(err);
        this.#opts.onExit?.();
        if (this.#closed || !this.#started) return;
        this.#restarts++;
        this.#opts.onLost?.(err);
        const restart = (): void => {
          this.#restartTimer = undefined;
          if (!this.#closed) this.#spawn().catch(() => {});
        };
        if (wasReady) restart();
        else this.#restartTimer = setTimeout(restart, RESTART_DELAY_MS).unref();
      });
    });
  }
}
