/**
 * @module One worker thread as an RPC endpoint, worker side (see `worker-rpc.ts` for the main
 * side): a logger whose records the main thread re-logs, calls to the main thread (usable while
 * loading), `serve()` once loaded (which tells the main thread it is ready) or `failed()`, and
 * an exit when the main thread asks, between two pieces of work.
 */
import { parentPort } from 'node:worker_threads';
import type { Logger } from './logger.ts';
import { createThreadLogger } from './thread-logger.ts';
import {
  RpcPeer,
  toRpcError,
  type RpcApi,
  type RpcCallOptions,
  type RpcHandlers,
  type RpcMessage,
  type RpcMethod,
  type RpcParams,
  type RpcResult,
} from './worker-rpc-peer.ts';

export interface RpcThread<Local extends RpcApi<Local>, Remote extends RpcApi<Remote>> {
  /** This thread's logger: its records go through the main thread's logger (redaction, levels). */
  readonly log: Logger;
  /** Calls the main thread. */
  request<K extends keyof Remote & string>(
    method: K,
    params: RpcParams<Remote, K>,
    opts?: RpcCallOptions,
  ): Promise<RpcResult<Remote, K>>;
  /** Serves `handlers` and tells the main thread this worker is ready. `onExit` runs before an asked exit. */
  serve(handlers: RpcHandlers<Local>, onExit?: () => Promise<void>): void;
  /** Tells the main thread this worker could not load (it is ended, and replaced after a delay). */
  failed(err: unknown): void;
}

/** Serves `Local`'s methods to the main thread and calls `Remote`'s there. Call once per worker. */
export function workerRpcThread<
  Local extends RpcApi<Local>,
  Remote extends RpcApi<Remote> = Record<never, RpcMethod>,
>(): RpcThread<Local, Remote> {
  const port = parentPort;
  if (!port) throw new Error('workerRpcThread() must run in a worker thread');
  const post = (m: RpcMessage, transfer: readonly ArrayBuffer[] = []): void => port.postMessage(m, [...transfer]);
  const log = createThreadLogger((rec) => post({ rpc: 'log', rec }));
  const peer = new RpcPeer<Remote, Local>(post, log);
  let exit: (() => Promise<void>) | undefined;
  port.on('message', (m: RpcMessage) => {
    if (m.rpc !== 'exit') return peer.receive(m);
    // A message handler runs between two macrotasks: never inside an addon or a synthesis.
    void Promise.resolve()
      .then(() => exit?.())
      .finally(() => process.exit(0));
  });
  return {
    log,
    request: (method, params, opts) => peer.request(method, params, opts),
    serve(handlers, onExit) {
      peer.serve(handlers);
      exit = onExit;
      post({ rpc: 'ready' });
    },
    failed: (err) => post({ rpc: 'loadFailed', error: toRpcError(err) }),
  };
}
