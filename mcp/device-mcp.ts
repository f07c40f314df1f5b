/**
 * @module The device as an MCP server (as the xiaozhi firmware serves it), reached through an injected channel: the
 * server hands us each `{"type":"mcp"}` payload and gives us a `send` for ours. JSON-RPC with
 * integer ids only (the firmware ignores anything else), `tools/list` paged by tool-name cursors,
 * slow replies (camera) allowed, and defensive parsing: firmware errors may lack `code` and carry
 * unescaped text that breaks JSON.
 */
import { truncateForLog } from '../core/log-fields.ts';
import type { Logger } from '../core/logger.ts';
import { fitToolBudget } from './tool-budget.ts';
import { schemaOverLimits } from './schema-limits.ts';
import { normalizeToolResult } from './normalize.ts';
import { ToolNameMap } from './name-patterns.ts';
import type { CallToolOptions, JsonSchema, ToolResult, ToolSource, ToolSpec } from './tool-source.ts';
import { errorResult } from './tool-source.ts';

/**
 * What a device may announce: 11,843 announced tools were measured adding 2.39 MB to every LLM
 * request, and a 30,000-deep schema overflowed the stack. Stock firmware has about a dozen tools with flat
 * schemas, so these leave ample room.
 */
export const DEVICE_TOOL_LIMITS = { tools: 64, listed: 256, nameChars: 128, descriptionChars: 1000, schemaDepth: 16, schemaChars: 16_384 } as const;

/** One schema's bounds as the shared check takes them: a value is at least one character of JSON. */
const DEVICE_SCHEMA_LIMITS = { maxDepth: DEVICE_TOOL_LIMITS.schemaDepth, maxNodes: DEVICE_TOOL_LIMITS.schemaChars, maxChars: DEVICE_TOOL_LIMITS.schemaChars };

export interface DeviceMcpOptions {
  /** Sends one JSON-RPC payload to the device (the server wraps it in `{"type":"mcp","payload":...}`). */
  send: (payload: Record<string, unknown>) => void;
  log: Logger;
  /** Advertised in `initialize` so the device can upload camera photos. */
  vision?: { url: string; token: string };
  /** Per request, in ms (default 30 000: the camera tool is slow). */
  timeoutMs?: number;
  /** Prepended to exposed tool names (e.g. `device_`); none by default. */
  namePrefix?: string;
  /** Cap on tools/list pages followed (default 32). */
  maxPages?: number;
  /**
   * Bytes all of the device's tool specs may take in a model request (default 8192): past it
   * descriptions are cut, then tools dropped from the last (`tool-budget.ts`).
   */
  maxSchemaBytes?: number;
  clientInfo?: { name: string; version: string };
}

export interface DeviceMcp {
  /** Feeds one `payload` of a device `mcp` message (object or raw JSON text). Never throws. */
  handleMessage(payload: unknown): void;
  /** Sends `initialize`, then pages `tools/list`. Rejects only on abort, close or an initialize failure. */
  initialize(signal?: AbortSignal): Promise<void>;
  /** The device's tools as a ToolSource (names sanitized, e.g. `self_audio_speaker_set_volume`). */
  toolSource(): ToolSource;
  tools(): ToolSpec[];
  /** Device-side name for an exposed name (for logs and tests). */
  deviceToolName(exposed: string): string | undefined;
  /** Rejects every pending request; later calls return error results. */
  close(): void;
}

/** What a pending request settles with. */
type RpcOutcome = { ok: true; result: unknown } | { ok: false; message: string; code?: number };

interface Pending {
  method: string;
  resolve: (o: RpcOutcome) => void;
  timer: NodeJS.Timeout;
  cleanup: () => void;
}

function isRecord(v: unknown): v is Record<string, unknown> {
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

/** Creates the device MCP client for one session. */
export function createDeviceMcp(opts: DeviceMcpOptions): DeviceMcp {
  const log = opts.log.child({ component: 'device-mcp' });
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const prefix = opts.namePrefix ?? '';
  const maxPages = opts.maxPages ?? 32;
  const maxSchemaBytes = opts.maxSchemaBytes ?? 8192;
  let nextId = 1;
  let closed = false;
  const pending = new Map<number, Pending>();
  let specs: ToolSpec[] = [];
  let names = new ToolNameMap<string>();
  let offered = new Set<string>();

  function request(method: string, params: Record<string, unknown>, signal?: AbortSignal, ms = timeoutMs): Promise<RpcOutcome> {
    if (closed) return Promise.resolve({ ok: false, message: 'device MCP channel is closed' });
    if (signal?.aborted) return Promise.resolve({ ok: false, message: 'cancelled' });
    const id = nextId++;
    return new Promise<RpcOutcome>((resolve) => {
      const onAbort = (): void => void settle(id, { ok: false, message: 'cancelled' });
      const timer = setTimeout(() => {
        log.warn({ method, id, timeoutMs: ms }, 'device mcp request timed out');
        settle(id, { ok: false, message: `device did not answer ${method} within ${ms} ms` });
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
      pending.set(id, { method, resolve, timer, cleanup: () => signal?.removeEventListener('abort', onAbort) });
      try {
        opts.send({ jsonrpc: '2.0', id, method, params });
      } catch (err) {
        settle(id, { ok: false, message: `could not send to device: ${err instanceof Error ? err.message : String(err)}` });
      }
    });
  }

  function settle(id: number, outcome: RpcOutcome): boolean {
    const p = pending.get(id);
    if (!p) return false;
    pending.delete(id);
    clearTimeout(p.timer);
    p.cleanup();
    p.resolve(outcome);
    return true;
  }

  function handleMessage(payload: unknown): void {
    let msg: unknown = payload;
    if (typeof payload === 'string') {
      try {
        msg = JSON.parse(payload);
      } catch {
        const salvaged = salvageBrokenReply(payload);
        if (salvaged && settle(salvaged.id, { ok: false, message: salvaged.message })) {
          log.warn({ id: salvaged.id }, 'device mcp reply was invalid json; error message salvaged');
        } else {
          log.warn({ chars: payload.length }, 'device mcp payload is not json, ignored');
        }
        return;
      }
    }
    if (!isRecord(msg)) {
      log.warn({ kind: Array.isArray(msg) ? 'array' : typeof msg }, 'device mcp payload is not an object, ignored');
      return;
    }
    const { id } = msg;
    if ('method' in msg) {
      // The firmware sends no requests or notifications; nothing to answer.
      log.debug({ method: typeof msg.method === 'string' ? msg.method : undefined }, 'device mcp message with a method ignored');
      return;
    }
    if (typeof id !== 'number' || !Number.isInteger(id)) {
      log.warn({ idType: typeof id }, 'device mcp reply without an integer id ignored');
      return;
    }
    let outcome: RpcOutcome;
    if ('error' in msg) {
      const e = msg.error;
      const message = isRecord(e) && typeof e.message === 'string' ? e.message : typeof e === 'string' ? e : 'device returned an error';
      outcome = isRecord(e) && typeof e.code === 'number' ? { ok: false, message, code: e.code } : { ok: false, message };
    } else if ('result' in msg) {
      outcome = { ok: true, result: msg.result };
    } else {
      log.warn({ id }, 'device mcp reply without result or error ignored');
      return;
    }
    if (!settle(id, outcome)) log.debug({ id }, 'device mcp reply for an unknown or finished request ignored');
  }

  function setTools(raw: unknown[]): void {
    const map = new ToolNameMap<string>();
    const out: ToolSpec[] = [];
    const seen = new Set<string>();
    const dropped = { overCount: 0, badName: 0, schemaTooDeep: 0, schemaTooLarge: 0 };
    for (const t of raw) {
      if (!isRecord(t) || typeof t.name !== 'string' || t.name === '' || seen.has(t.name)) continue;
      if (t.name.length > DEVICE_TOOL_LIMITS.nameChars) {
        dropped.badName++;
        continue;
      }
      if (out.length >= DEVICE_TOOL_LIMITS.tools) {
        dropped.overCount++;
        continue;
      }
      const problem = isRecord(t.inputSchema) ? schemaOverLimits(t.inputSchema, DEVICE_SCHEMA_LIMITS) : undefined;
      if (problem) {
        dropped[problem.kind === 'tooDeep' ? 'schemaTooDeep' : 'schemaTooLarge']++;
        continue;
      }
      seen.add(t.name);
      const schema: JsonSchema = isRecord(t.inputSchema) ? { ...(t.inputSchema as JsonSchema) } : { type: 'object', properties: {} };
      if (schema.type === undefined) schema.type = 'object';
      // As the model will be sent it, so that its size is measured as sent.
      if (schema.type === 'object' && schema.properties === undefined) schema.properties = {};
      const name = map.add(`${prefix}${t.name}`, t.name);
      const description = typeof t.description === 'string' ? t.description.slice(0, DEVICE_TOOL_LIMITS.descriptionChars) : undefined;
      out.push(description !== undefined ? { name, description, inputSchema: schema } : { name, inputSchema: schema });
    }
    // Once per initialize: every device tool goes into every LLM request of the session.
    if (Object.values(dropped).some((n) => n > 0)) log.warn({ dropped, kept: out.length, limits: DEVICE_TOOL_LIMITS }, 'device mcp tools dropped: over the limits');
    const fit = fitToolBudget(out, maxSchemaBytes);
    if (fit.shortened.length > 0 || fit.dropped.length > 0) {
      // Once per initialize; the names are the device's, so the lists are cut for the log.
      const names = (list: string[]): string | undefined => truncateForLog(list.join(', '), 1000);
      log.warn(
        { maxSchemaBytes, bytesAnnounced: fit.bytesBefore, bytesOffered: fit.bytesAfter, shortened: names(fit.shortened), dropped: names(fit.dropped), droppedCount: fit.dropped.length },
        'device mcp tools over the schema budget',
      );
    }
    specs = fit.specs;
    names = map;
    // A tool dropped for size is not offered, so it is not callable either (the model never saw it).
    offered = new Set(specs.map((t) => t.name));
  }

  async function initialize(signal?: AbortSignal): Promise<void> {
    const started = performance.now();
    const capabilities: Record<string, unknown> = opts.vision ? { vision: { url: opts.vision.url, token: opts.vision.token } } : {};
    const init = await request(
      'initialize',
      { protocolVersion: '2024-11-05', capabilities, clientInfo: opts.clientInfo ?? { name: 'xiaozhi-ts-server', version: '0.1.0' } },
      signal,
    );
    if (!init.ok) throw new Error(`device MCP initialize failed: ${init.message}`);
    // The device ignores notifications; standard clients send it, so we do too.
    if (!closed) opts.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    const all: unknown[] = [];
    const cursors = new Set<string>();
    let cursor = '';
    for (let page = 0; page < maxPages; page++) {
      const r = await request('tools/list', { cursor, withUserTools: false }, signal);
      if (!r.ok) {
        // e.g. "Failed to add tool X because of payload size limit": keep what we have.
        log.warn({ page, err: truncateForLog(r.message), tools: all.length }, 'device mcp tools/list failed, keeping the tools listed so far');
        break;
      }
      const result = isRecord(r.result) ? r.result : {};
      // Bounded while collecting: a device may announce thousands (setTools keeps the first few dozen).
      if (Array.isArray(result.tools)) for (const t of result.tools.slice(0, Math.max(0, DEVICE_TOOL_LIMITS.listed - all.length))) all.push(t);
      const next = result.nextCursor;
      // The cursor is the name of the first tool not yet returned; absent (or empty) on the last page.
      if (typeof next !== 'string' || next === '') break;
      if (cursors.has(next)) {
        log.warn({ cursor: truncateForLog(next) }, 'device mcp tools/list cursor repeated, stopping');
        break;
      }
      cursors.add(next);
      cursor = next;
      if (page === maxPages - 1) log.warn({ maxPages }, 'device mcp tools/list page cap reached');
    }
    if (signal?.aborted) throw new Error('device MCP initialize aborted');
    setTools(all);
    log.info({ tools: specs.length, ms: Math.round(performance.now() - started) }, 'device mcp initialized');
  }

  async function callTool(name: string, args: Record<string, unknown>, callOpts: CallToolOptions): Promise<ToolResult> {
    const deviceName = offered.has(name) ? names.get(name) : undefined;
    if (deviceName === undefined) return errorResult(`Unknown device tool "${name}".`);
    if (typeof args !== 'object' || args === null || Array.isArray(args)) return errorResult(`Tool "${name}" needs its arguments as a JSON object.`);
    const started = performance.now();
    const r = await request('tools/call', { name: deviceName, arguments: args }, callOpts.signal, callOpts.timeoutMs ?? timeoutMs);
    const ms = Math.round(performance.now() - started);
    if (!r.ok) {
      log.info({ tool: deviceName, ms, err: truncateForLog(r.message) }, 'device tool call failed');
      if (callOpts.signal.aborted) return errorResult(`Device tool ${deviceName} was cancelled.`);
      return errorResult(`Device tool ${deviceName} failed: ${r.message}`);
    }
    const result = normalizeToolResult(r.result);
    log.info({ tool: deviceName, ms, isError: result.isError }, 'device tool called');
    return result;
  }

  const source: ToolSource = {
    listTools: async () => specs,
    callTool,
  };

  return {
    handleMessage(payload) {
      try {
        handleMessage(payload);
      } catch (err) {
        log.warn({ err: err instanceof Error ? err.message : String(err) }, 'device mcp message handling failed');
      }
    },
    initialize,
    toolSource: () => source,
    tools: () => specs,
    deviceToolName: (exposed) => names.get(exposed),
    close() {
      if (closed) return;
      closed = true;
      for (const id of [...pending.keys()]) settle(id, { ok: false, message: 'device disconnected' });
    },
  };
}
