/**
 * @module The fetch the streamable HTTP transport uses: it ties each request's response stream to
 * the request, so that a request the client gives up on (cancelled or timed out) stops being read.
 *
 * Why: the SDK answers a request over the POST's own response (often an SSE stream) and reads it
 * until the server ends it, under one abort signal for the whole transport. Its cancellation only
 * sends `notifications/cancelled`; a server that does not act on it (a stateless server gets it in
 * a new request; a hung handler ignores it) keeps that stream, and our socket, open for as long as
 * it lives: one socket leaked per timed-out call. Here each request's POST gets its own signal,
 * aborted when the cancellation for its id goes out; the stream then ends quietly (as if the
 * server had closed it), so the SDK neither reports an error nor tries to resume it.
 */
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { linkedScope, type Scope } from '../core/abort.ts';

type RequestId = string | number;

/** What a POST body says, as far as this module cares. */
type Outgoing = { kind: 'request'; id: RequestId } | { kind: 'cancel'; id: RequestId } | { kind: 'other' };

function isId(v: unknown): v is RequestId {
  return typeof v === 'string' || typeof v === 'number';
}

function outgoing(init: RequestInit | undefined): Outgoing {
  // The SDK posts one JSON-RPC message as a string; batches and anything else pass through.
  if (init?.method !== 'POST' || typeof init.body !== 'string') return { kind: 'other' };
  let msg: unknown;
  try {
    msg = JSON.parse(init.body);
  } catch {
    return { kind: 'other' };
  }
  if (typeof msg !== 'object' || msg === null || Array.isArray(msg)) return { kind: 'other' };
  const m = msg as { id?: unknown; method?: unknown; params?: { requestId?: unknown } };
  if (typeof m.method !== 'string') return { kind: 'other' };
  if (isId(m.id)) return { kind: 'request', id: m.id };
  if (m.method === 'notifications/cancelled' && isId(m.params?.requestId))
    return { kind: 'cancel', id: m.params.requestId };
  return { kind: 'other' };
}

/** Thrown into a request's fetch when its request was cancelled; never leaves this module. */
class RequestAbandoned extends Error {}

/** A fetch for one StreamableHTTPClientTransport (request ids are per client). */
export function requestScopedFetch(base: FetchLike = fetch): FetchLike {
  /** Requests whose answer is still being awaited or read: stop reading it. */
  const open = new Map<RequestId, Scope>();

  const stop = (id: RequestId): void => {
    open.get(id)?.abort(new RequestAbandoned(`request ${String(id)} was cancelled`));
    open.delete(id);
  };

  return async (url, init) => {
    const out = outgoing(init);
    if (out.kind === 'cancel') {
      try {
        return await base(url, init);
      } finally {
        // After the notification went out (or failed): the server may answer the cancellation
        // on that stream first. Either way nothing more is wanted from it.
        stop(out.id);
      }
    }
    if (out.kind !== 'request') return base(url, init);

    // The transport's own signal (its close) still ends the request, through the scope.
    const scope = linkedScope(init?.signal ?? undefined);
    open.set(out.id, scope);
    const finish = (): void => {
      scope.dispose();
      if (open.get(out.id) === scope) open.delete(out.id);
    };
    const abandoned = (): boolean => scope.signal.reason instanceof RequestAbandoned;
    let res: Response;
    try {
      res = await base(url, { ...init, signal: scope.signal });
    } catch (err) {
      finish();
      // Cancelled before the answer began: an empty 202 tells the SDK there is nothing to read.
      if (abandoned()) return new Response(null, { status: 202 });
      throw err;
    }
    const body = res.body;
    if (!res.ok || res.status === 202 || !body) {
      finish();
      return res;
    }
    const reader = body.getReader();
    const stream = new ReadableStream<Uint8Array>({
      async pull(ctrl) {
        try {
          const { done, value } = await reader.read();
          if (!done) {
            ctrl.enqueue(value);
            return;
          }
          finish();
          ctrl.close();
        } catch (err) {
          finish();
          // Our own abort ends the stream like a server that closed it; a real failure (the
          // server died, the network broke) stays an error for the SDK to report.
          if (abandoned()) ctrl.close();
          else ctrl.error(err);
        }
      },
      cancel(reason) {
        finish();
        return reader.cancel(reason);
      },
    });
    return new Response(stream, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}
