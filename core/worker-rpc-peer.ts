/**
 * @module The message layer of our worker RPC, the same on both sides of a thread boundary:
 * requests with ids and a pending map, an answer that is one value or a stream of items then an
 * end, notifications (no answer), cancellation (the caller's AbortSignal, or a consumer that stops
 * reading, tells the other side) and errors that cross as `VoiceError`s with their code. It owns
 * no thread: `worker-rpc.ts` (main side) and `worker-rpc-thread.ts` (in the worker) carry its
 * messages, as the MCP SDK's protocol layer sits on a tiny transport.
 */
import { AsyncQueue } from './async-queue.ts';
import { ErrorCode, VoiceError, toVoiceError } from './errors.ts';
import type { Logger } from './logger.ts';
import type { ThreadLogRecord } from './thread-logger.ts';

/** One method a side serves: its params, its result and, for a streamed answer, its items. */
export interface RpcMethod {
  params: unknown;
  result: unknown;
  item?: unknown;
}
/** The methods one side serves, by name (an interface whose members are `RpcMethod`s). */
export type RpcApi<A> = { [K in keyof A]: RpcMethod };
export type RpcParams<A, K extends keyof A> = A[K] extends { params: infer P } ? P : never;
export type RpcResult<A, K extends keyof A> = A[K] extends { result: infer R } ? R : never;
export type RpcItem<A, K extends keyof A> = A[K] extends { item: infer I } ? I : never;

/** A value sent with its buffers moved to the other thread, not copied. */
export class Moved<T> {
  readonly value: T;
  readonly transfer: readonly ArrayBuffer[];
  constructor(value: T, transfer: readonly ArrayBuffer[]) {
    this.value = value;
    this.transfer = transfer;
  }
}

/** What a handler gets besides its params. */
export interface RpcCall<I> {
  /** Aborted when the caller cancels (its signal, or it stopped reading) or its side is gone. */
  readonly signal: AbortSignal;
  /** Sends one item of a streamed answer (dropped once the call is cancelled). */
  send(item: I, transfer?: readonly ArrayBuffer[]): void;
}

export type RpcHandlers<A extends RpcApi<A>> = {
  [K in keyof A]: (
    params: RpcParams<A, K>,
    call: RpcCall<RpcItem<A, K>>,
  ) => RpcResult<A, K> | Moved<RpcResult<A, K>> | Promise<RpcResult<A, K> | Moved<RpcResult<A, K>>>;
};

export interface RpcCallOptions {
  /** Aborting rejects the call at once (code `aborted`) and cancels it on the other side. */
  signal?: AbortSignal;
  /** Buffers of the params to move rather than copy. */
  transfer?: readonly ArrayBuffer[];
}

export interface RpcError {
  code: string;
  message: string;
  retryable: boolean;
}

/** Everything that crosses the boundary: the calls of this layer, then the worker's life cycle. */
export type RpcMessage =
  | { rpc: 'call'; id: number; method: string; params: unknown }
  | { rpc: 'notify'; method: string; params: unknown }
  | { rpc: 'cancel'; id: number }
  | { rpc: 'item'; id: number; value: unknown }
  | { rpc: 'result'; id: number; value: unknown }
  | { rpc: 'error'; id: number; error: RpcError }
  /** The worker has loaded and serves calls. */
  | { rpc: 'ready' }
  /** The worker could not load: it is ended (and, after a delay, replaced). */
  | { rpc: 'loadFailed'; error: RpcError }
  | { rpc: 'log'; rec: ThreadLogRecord }
  /** Asks the worker to end between two pieces of work. */
  | { rpc: 'exit' };

export type RpcSend = (m: RpcMessage, transfer: readonly ArrayBuffer[]) => void;

export function toRpcError(err: unknown): RpcError {
  const e = toVoiceError(err);
  return { code: e.code, message: e.message, retryable: e.retryable };
}

export function fromRpcError(e: RpcError): VoiceError {
  return new VoiceError(e.code as ErrorCode, e.message, { retryable: e.retryable });
}

/** The signal notification handlers get: nobody cancels a notification. */
const NEVER = new AbortController().signal;

interface Pending {
  item(value: unknown): void;
  end(err: VoiceError | undefined, value?: unknown): void;
}

interface InFlight extends Pending {
  /** Removes the listener on the caller's signal (the call is over, or given up). */
  detach(): void;
}

/** One side of the conversation: calls `Remote`'s methods and serves `Local`'s. */
export class RpcPeer<Remote extends RpcApi<Remote>, Local extends RpcApi<Local> = Record<never, RpcMethod>> {
  readonly #send: RpcSend;
  readonly #log: Logger;
  #handlers: Partial<RpcHandlers<Local>>;
  readonly #pending = new Map<number, InFlight>();
  readonly #serving = new Map<number, AbortController>();
  #nextId = 1;
  #closed: VoiceError | undefined;

  constructor(send: RpcSend, log: Logger, handlers: Partial<RpcHandlers<Local>> = {}) {
    this.#send = send;
    this.#log = log;
    this.#handlers = handlers;
  }

  /** Calls made and not answered yet. */
  get pending(): number {
    return this.#pending.size;
  }

  /** Serves `handlers` from now on. */
  serve(handlers: RpcHandlers<Local>): void {
    this.#handlers = handlers;
  }

  request<K extends keyof Remote & string>(
    method: K,
    params: RpcParams<Remote, K>,
    opts: RpcCallOptions = {},
  ): Promise<RpcResult<Remote, K>> {
    return new Promise((resolve, reject) => {
      this.#call(method, params, opts, {
        item: () => {},
        end: (err, value) => (err ? reject(err) : resolve(value as RpcResult<Remote, K>)),
      });
    });
  }

  /** A call answered by a stream of items; stopping early cancels it. */
  async *stream<K extends keyof Remote & string>(
    method: K,
    params: RpcParams<Remote, K>,
    opts: RpcCallOptions = {},
  ): AsyncGenerator<RpcItem<Remote, K>> {
    const items = new AsyncQueue<RpcItem<Remote, K>>();
    let ended = false;
    const id = this.#call(method, params, opts, {
      item: (v) => items.push(v as RpcItem<Remote, K>),
      end: (err) => {
        ended = true;
        if (err) items.fail(err);
        else items.close();
      },
    });
    try {
      yield* items;
    } finally {
      if (!ended) this.#cancel(id);
    }
  }

  notify<K extends keyof Remote & string>(
    method: K,
    params: RpcParams<Remote, K>,
    transfer: readonly ArrayBuffer[] = [],
  ): void {
    if (!this.#closed) this.#send({ rpc: 'notify', method, params }, transfer);
  }

  /** Fails every call in flight with `err`, and every later one; cancels the calls being served. */
  close(err: VoiceError): void {
    if (this.#closed) return;
    this.#closed = err;
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const p of pending) p.end(err);
    for (const ac of this.#serving.values()) ac.abort(err);
    this.#serving.clear();
  }

  /** Handles a message of this layer; the life-cycle ones are the carrier's. */
  receive(m: RpcMessage): void {
    switch (m.rpc) {
      case 'call':
        return this.#serveCall(m.id, m.method, m.params);
      case 'notify':
        return this.#serveNotify(m.method, m.params);
      case 'cancel':
        this.#serving.get(m.id)?.abort(new VoiceError(ErrorCode.Aborted, 'cancelled by the caller'));
        this.#serving.delete(m.id);
        return;
      case 'item':
        this.#pending.get(m.id)?.item(m.value);
        return;
      case 'result':
      case 'error': {
        const p = this.#pending.get(m.id);
        this.#pending.delete(m.id);
        p?.end(m.rpc === 'error' ? fromRpcError(m.error) : undefined, m.rpc === 'result' ? m.value : undefined);
        return;
      }
      default:
        return;
    }
  }

  #call(method: string, params: unknown, opts: RpcCallOptions, p: Pending): number {
    const id = this.#nextId++;
    const { signal } = opts;
    if (this.#closed) {
      p.end(this.#closed);
      return id;
    }
    if (signal?.aborted) {
      p.end(new VoiceError(ErrorCode.Aborted, 'aborted', { cause: signal.reason }));
      return id;
    }
    const onAbort = (): void => {
      this.#cancel(id);
      p.end(new VoiceError(ErrorCode.Aborted, 'aborted', { cause: signal?.reason }));
    };
    const detach = (): void => signal?.removeEventListener('abort', onAbort);
    this.#pending.set(id, {
      item: p.item,
      end: (err, value) => {
        detach();
        p.end(err, value);
      },
      detach,
    });
    signal?.addEventListener('abort', onAbort, { once: true });
    this.#send({ rpc: 'call', id, method, params }, opts.transfer ?? []);
    return id;
  }

  /** Gives a call up: forgotten here (nothing stays on the caller's signal), cancelled there. */
  #cancel(id: number): void {
    const call = this.#pending.get(id);
    if (!call) return;
    this.#pending.delete(id);
    call.detach();
    if (!this.#closed) this.#send({ rpc: 'cancel', id }, []);
  }

  #handler(method: string): ((params: unknown, call: RpcCall<unknown>) => unknown) | undefined {
    return this.#handlers[method as keyof Local] as ((params: unknown, call: RpcCall<unknown>) => unknown) | undefined;
  }

  #serveCall(id: number, method: string, params: unknown): void {
    const ac = new AbortController();
    this.#serving.set(id, ac);
    const live = (): boolean => this.#serving.get(id) === ac;
    const answer = (m: RpcMessage, transfer: readonly ArrayBuffer[] = []): void => {
      if (!live()) return;
      this.#serving.delete(id);
      this.#send(m, transfer);
    };
    const fail = (err: unknown): void => answer({ rpc: 'error', id, error: toRpcError(err) });
    const handler = this.#handler(method);
    if (!handler) return fail(new VoiceError(ErrorCode.Internal, `no RPC method ${method}`));
    const call: RpcCall<unknown> = {
      signal: ac.signal,
      send: (item, transfer = []) => {
        if (live()) this.#send({ rpc: 'item', id, value: item }, transfer);
      },
    };
    // Called at once, not on a later tick: calls take effect in the order they arrived.
    let out: unknown;
    try {
      out = handler(params, call);
    } catch (err) {
      return fail(err);
    }
    Promise.resolve(out).then(
      (v) =>
        v instanceof Moved
          ? answer({ rpc: 'result', id, value: v.value }, v.transfer)
          : answer({ rpc: 'result', id, value: v }),
      fail,
    );
  }

  #serveNotify(method: string, params: unknown): void {
    const handler = this.#handler(method);
    const report = (err: unknown): void =>
      this.#log.warn({ method, err: toVoiceError(err).message }, 'RPC notification failed');
    if (!handler) return report(new Error('no such method'));
    try {
      Promise.resolve(handler(params, { signal: NEVER, send: () => {} })).catch(report);
    } catch (err) {
      report(err);
    }
  }
}
