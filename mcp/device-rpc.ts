/**
 * @module The JSON-RPC channel to a device's MCP server (as the xiaozhi firmware serves it): our
 * requests with integer ids (the firmware ignores anything else), each settled once by its reply,
 * its timeout, its caller's abort or the channel's close; and defensive reading of the replies:
 * firmware errors may lack `code` and carry unescaped text that breaks JSON.
 */
import type { Logger } from '../core/logger.ts';

/** What a request settles with. */
export type RpcOutcome = { ok: true; result: unknown } | { ok: false; message: string; code?: number };

interface Pending {
  resolve: (o: RpcOutcome) => void;
  timer: NodeJS.Timeout;
  cleanup: () => void;
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Recovers id and error message from a reply that is not valid JSON: the firmware pastes error
 * text (with quotes) into the JSON unescaped. Only an error reply can be salvaged this way.
 */
export function salvageBrokenReply(text: string): { id: number; message: string } | undefined {
  const id = /"id"\s*:\s*(-?\d+)\s*[,}]/.exec(text);
  const err = /"error"\s*:\s*\{\s*(?:"code"\s*:\s*-?\d+\s*,\s*)?"message"\s*:\s*"([\s\S]*)"\s*\}\s*\}?\s*$/.exec(text);
  if (!id?.[1] || err?.[1] === undefined) return undefined;
  return { id: Number(id[1]), message: err[1] };
}

/** The outcome an `error` member stands for: its message (or the text it is), and its code when numeric. */
function errorOutcome(e: unknown): RpcOutcome {
  const message =
    isRecord(e) && typeof e.message === 'string' ? e.message : typeof e === 'string' ? e : 'device returned an error';
  return isRecord(e) && typeof e.code === 'number' ? { ok: false, message, code: e.code } : { ok: false, message };
}

export class DeviceRpc {
  readonly #send: (payload: Record<string, unknown>) => void;
  readonly #log: Logger;
  readonly #pending = new Map<number, Pending>();
  #nextId = 1;
  #closed = false;

  /** `send` delivers one JSON-RPC payload to the device. */
  constructor(send: (payload: Record<string, unknown>) => void, log: Logger) {
    this.#send = send;
    this.#log = log;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** One request; never rejects: a failure, timeout, abort or close settles it with `ok: false`. */
  request(method: string, params: Record<string, unknown>, ms: number, signal?: AbortSignal): Promise<RpcOutcome> {
    if (this.#closed) return Promise.resolve({ ok: false, message: 'device MCP channel is closed' });
    if (signal?.aborted) return Promise.resolve({ ok: false, message: 'cancelled' });
    const id = this.#nextId++;
    return new Promise<RpcOutcome>((resolve) => {
      const onAbort = (): void => void this.#settle(id, { ok: false, message: 'cancelled' });
      const timer = setTimeout(() => {
        this.#log.warn({ method, id, timeoutMs: ms }, 'device mcp request timed out');
        this.#settle(id, { ok: false, message: `device did not answer ${method} within ${ms} ms` });
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#pending.set(id, { resolve, timer, cleanup: () => signal?.removeEventListener('abort', onAbort) });
      try {
        this.#send({ jsonrpc: '2.0', id, method, params });
      } catch (err) {
        this.#settle(id, {
          ok: false,
          message: `could not send to device: ${err instanceof Error ? err.message : String(err)}`,
        });
      }
    });
  }

  /** A notification (no reply expected); nothing once closed. */
  notify(method: string): void {
    if (!this.#closed) this.#send({ jsonrpc: '2.0', method });
  }

  /** Feeds one payload of a device `mcp` message (object or raw JSON text): settles the request it answers. */
  handleMessage(payload: unknown): void {
    let msg = payload;
    if (typeof payload === 'string') {
      const parsed = this.#parse(payload);
      if (!parsed) return;
      msg = parsed.value;
    }
    if (!isRecord(msg)) {
      this.#log.warn(
        { kind: Array.isArray(msg) ? 'array' : typeof msg },
        'device mcp payload is not an object, ignored',
      );
      return;
    }
    const { id } = msg;
    if ('method' in msg) {
      // The firmware sends no requests or notifications; nothing to answer.
      this.#log.debug(
        { method: typeof msg.method === 'string' ? msg.method : undefined },
        'device mcp message with a method ignored',
      );
      return;
    }
    if (typeof id !== 'number' || !Number.isInteger(id)) {
      this.#log.warn({ idType: typeof id }, 'device mcp reply without an integer id ignored');
      return;
    }
    let outcome: RpcOutcome;
    if ('error' in msg) outcome = errorOutcome(msg.error);
    else if ('result' in msg) outcome = { ok: true, result: msg.result };
    else {
      this.#log.warn({ id }, 'device mcp reply without result or error ignored');
      return;
    }
    if (!this.#settle(id, outcome))
      this.#log.debug({ id }, 'device mcp reply for an unknown or finished request ignored');
  }

  /** Settles every pending request as failed; later requests fail at once. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const id of [...this.#pending.keys()]) this.#settle(id, { ok: false, message: 'device disconnected' });
  }

  /** The payload text as JSON; undefined (after settling what an unescaped error reply answers) when it is not. */
  #parse(text: string): { value: unknown } | undefined {
    try {
      return { value: JSON.parse(text) as unknown };
    } catch {
      const salvaged = salvageBrokenReply(text);
      if (salvaged && this.#settle(salvaged.id, { ok: false, message: salvaged.message })) {
        this.#log.warn({ id: salvaged.id }, 'device mcp reply was invalid json; error message salvaged');
      } else {
        this.#log.warn({ chars: text.length }, 'device mcp payload is not json, ignored');
      }
      return undefined;
    }
  }

  #settle(id: number, outcome: RpcOutcome): boolean {
    const p = this.#pending.get(id);
    if (!p) return false;
    this.#pending.delete(id);
    clearTimeout(p.timer);
    p.cleanup();
    p.resolve(outcome);
    return true;
  }
}
