/**
 * @module The device as an MCP server (as the xiaozhi firmware serves it), reached through an injected channel: the
 * server hands us each `{"type":"mcp"}` payload and gives us a `send` for ours. The JSON-RPC
 * channel is `device-rpc.ts`; here: `initialize`, `tools/list` paged by tool-name cursors, the
 * tools kept within bounds, and calls (slow replies, the camera's, allowed).
 */
import { truncateForLog } from '../core/log-fields.ts';
import type { Logger } from '../core/logger.ts';
import { readAnnouncedTools, type AnnouncedToolLimits } from './announced-tool.ts';
import { DeviceRpc, isRecord } from './device-rpc.ts';
import { fitToolBudget } from './tool-budget.ts';
import { normalizeToolResult } from './normalize.ts';
import { ToolNameMap } from './name-patterns.ts';
import { SharedToolSets } from './device-tool-sets.ts';
import type { CallToolOptions, ToolResult, ToolSource, ToolSpec } from './contract/tool-source.ts';
import { errorResult } from './contract/tool-source.ts';

/**
 * What a device may announce: 11,843 announced tools were measured adding 2.39 MB to every LLM
 * request, and a 30,000-deep schema overflowed the stack. Stock firmware has about a dozen tools with flat
 * schemas, so these leave ample room.
 */
export const DEVICE_TOOL_LIMITS = {
  tools: 64,
  listed: 256,
  nameChars: 128,
  descriptionChars: 1000,
  schemaDepth: 16,
  schemaChars: 16_384,
} as const;

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

/** One announced tool's bounds as the shared reading takes them: a value is at least one character of JSON. */
const DEVICE_TOOL_BOUNDS: AnnouncedToolLimits = {
  nameChars: DEVICE_TOOL_LIMITS.nameChars,
  descriptionChars: DEVICE_TOOL_LIMITS.descriptionChars,
  schema: {
    maxDepth: DEVICE_TOOL_LIMITS.schemaDepth,
    maxNodes: DEVICE_TOOL_LIMITS.schemaChars,
    maxChars: DEVICE_TOOL_LIMITS.schemaChars,
  },
  maxTools: DEVICE_TOOL_LIMITS.tools,
};

/** The device's tools as offered: the specs the model sees, and the device-side name of each. */
interface DeviceTools {
  specs: ToolSpec[];
  /** Exposed name → the device's, for every tool read. */
  names: ToolNameMap<string>;
  /** The tools the model is sent: one dropped for size is not callable either (the model never saw it). */
  offered: ReadonlySet<string>;
}

const NO_TOOLS: DeviceTools = { specs: [], names: new ToolNameMap<string>(), offered: new Set() };

/** A warning about what the bounds cut from a listing, logged by every session that has that listing. */
interface ReadNote {
  fields: Record<string, unknown>;
  msg: string;
}

/** The tools of a listing as read, and what to warn about them. */
interface ReadTools {
  tools: DeviceTools;
  notes: ReadNote[];
}

/** One read per distinct set of tools, shared by the sessions whose devices list it. */
const sharedReads = new SharedToolSets<ReadTools>();

/** Everything a read holds, as text: equal keys, interchangeable reads. */
function readKey(r: ReadTools): string {
  const names = r.tools.names.names().map((n) => [n, r.tools.names.get(n)]);
  return JSON.stringify([r.tools.specs, names, [...r.tools.offered], r.notes]);
}

/**
 * Pages `tools/list` (the cursor is the name of the first tool not yet returned), keeping at most
 * `DEVICE_TOOL_LIMITS.listed`. A failed page ends the listing with what came before it.
 */
async function listDeviceTools(
  rpc: DeviceRpc,
  o: { maxPages: number; timeoutMs: number; log: Logger },
  signal?: AbortSignal,
): Promise<unknown[]> {
  const all: unknown[] = [];
  const cursors = new Set<string>();
  let cursor = '';
  for (let page = 0; page < o.maxPages; page++) {
    const r = await rpc.request('tools/list', { cursor, withUserTools: false }, o.timeoutMs, signal);
    if (!r.ok) {
      // e.g. "Failed to add tool X because of payload size limit": keep what we have.
      o.log.warn(
        { page, err: truncateForLog(r.message), tools: all.length },
        'device mcp tools/list failed, keeping the tools listed so far',
      );
      break;
    }
    const result = isRecord(r.result) ? r.result : {};
    // Bounded while collecting: a device may announce thousands (readDeviceTools keeps the first few dozen).
    if (Array.isArray(result.tools))
      for (const t of result.tools.slice(0, Math.max(0, DEVICE_TOOL_LIMITS.listed - all.length))) all.push(t);
    const next = result.nextCursor;
    // Absent (or empty) on the last page.
    if (typeof next !== 'string' || next === '') break;
    if (cursors.has(next)) {
      o.log.warn({ cursor: truncateForLog(next) }, 'device mcp tools/list cursor repeated, stopping');
      break;
    }
    cursors.add(next);
    cursor = next;
    if (page === o.maxPages - 1) o.log.warn({ maxPages: o.maxPages }, 'device mcp tools/list page cap reached');
  }
  return all;
}

/**
 * The listed tools within the device's bounds (`DEVICE_TOOL_LIMITS`, read by `announced-tool.ts`)
 * and then its size budget (`tool-budget.ts`), names made safe and prefixed, with one note of each
 * kind of cut for the session's log: it is done once per initialize, and every device tool goes
 * into every model request of the session. Depends on nothing but its arguments (it is shared).
 */
function readDeviceTools(raw: readonly unknown[], o: { prefix: string; maxSchemaBytes: number }): ReadTools {
  const notes: ReadNote[] = [];
  const read = readAnnouncedTools(raw, DEVICE_TOOL_BOUNDS, o.prefix);
  const dropped = { overCount: read.overCount, badName: 0, schemaTooDeep: 0, schemaTooLarge: 0 };
  for (const t of read.leftOut) dropped[t.problem === 'nameTooLong' ? 'badName' : t.problem]++;
  const out = read.specs;
  if (Object.values(dropped).some((n) => n > 0))
    notes.push({
      fields: { dropped, kept: out.length, limits: DEVICE_TOOL_LIMITS },
      msg: 'device mcp tools dropped: over the limits',
    });
  const fit = fitToolBudget(out, o.maxSchemaBytes);
  if (fit.shortened.length > 0 || fit.dropped.length > 0) {
    // The names are the device's, so the lists are cut for the log.
    const names = (list: string[]): string | undefined => truncateForLog(list.join(', '), 1000);
    notes.push({
      fields: {
        maxSchemaBytes: o.maxSchemaBytes,
        bytesAnnounced: fit.bytesBefore,
        bytesOffered: fit.bytesAfter,
        shortened: names(fit.shortened),
        dropped: names(fit.dropped),
        droppedCount: fit.dropped.length,
      },
      msg: 'device mcp tools over the schema budget',
    });
  }
  return { tools: { specs: fit.specs, names: read.names, offered: new Set(fit.specs.map((t) => t.name)) }, notes };
}

/** One call of an offered tool by its exposed name; every failure becomes an error result the model can explain. */
async function callDeviceTool(
  rpc: DeviceRpc,
  tools: DeviceTools,
  call: { name: string; args: Record<string, unknown>; opts: CallToolOptions; timeoutMs: number; log: Logger },
): Promise<ToolResult> {
  const { name, args, opts, log } = call;
  const deviceName = tools.offered.has(name) ? tools.names.get(name) : undefined;
  if (deviceName === undefined) return errorResult(`Unknown device tool "${name}".`);
  if (typeof args !== 'object' || args === null || Array.isArray(args))
    return errorResult(`Tool "${name}" needs its arguments as a JSON object.`);
  const started = performance.now();
  const r = await rpc.request(
    'tools/call',
    { name: deviceName, arguments: args },
    opts.timeoutMs ?? call.timeoutMs,
    opts.signal,
  );
  const ms = Math.round(performance.now() - started);
  if (!r.ok) {
    log.info({ tool: deviceName, ms, err: truncateForLog(r.message) }, 'device tool call failed');
    if (opts.signal.aborted) return errorResult(`Device tool ${deviceName} was cancelled.`);
    return errorResult(`Device tool ${deviceName} failed: ${r.message}`);
  }
  const result = normalizeToolResult(r.result);
  log.info({ tool: deviceName, ms, isError: result.isError }, 'device tool called');
  return result;
}

/** Creates the device MCP client for one session. */
export function createDeviceMcp(opts: DeviceMcpOptions): DeviceMcp {
  const log = opts.log.child({ component: 'device-mcp' });
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const rpc = new DeviceRpc(opts.send, log);
  let tools = NO_TOOLS;

  async function initialize(signal?: AbortSignal): Promise<void> {
    const started = performance.now();
    const capabilities: Record<string, unknown> = opts.vision
      ? { vision: { url: opts.vision.url, token: opts.vision.token } }
      : {};
    const clientInfo = opts.clientInfo ?? { name: 'xiaozhi-ts-server', version: '0.1.0' };
    const init = await rpc.request(
      'initialize',
      { protocolVersion: '2024-11-05', capabilities, clientInfo },
      timeoutMs,
      signal,
    );
    if (!init.ok) throw new Error(`device MCP initialize failed: ${init.message}`);
    // The device ignores notifications; standard clients send it, so we do too.
    rpc.notify('notifications/initialized');
    const listed = await listDeviceTools(rpc, { maxPages: opts.maxPages ?? 32, timeoutMs, log }, signal);
    if (signal?.aborted) throw new Error('device MCP initialize aborted');
    const prefix = opts.namePrefix ?? '';
    const maxSchemaBytes = opts.maxSchemaBytes ?? 8192;
    // Devices of one firmware build list the same tools: their sessions share one read (this
    // one is garbage then). Read first: the reading bounds what the key is made of.
    const made = readDeviceTools(listed, { prefix, maxSchemaBytes });
    const read = sharedReads.share(readKey(made), made);
    for (const n of read.notes) log.warn(n.fields, n.msg);
    tools = read.tools;
    log.info({ tools: tools.specs.length, ms: Math.round(performance.now() - started) }, 'device mcp initialized');
  }

  const source: ToolSource = {
    listTools: async () => tools.specs,
    callTool: (name, args, callOpts) => callDeviceTool(rpc, tools, { name, args, opts: callOpts, timeoutMs, log }),
  };

  return {
    handleMessage(payload) {
      try {
        rpc.handleMessage(payload);
      } catch (err) {
        log.warn({ err: err instanceof Error ? err.message : String(err) }, 'device mcp message handling failed');
      }
    },
    initialize,
    toolSource: () => source,
    tools: () => tools.specs,
    deviceToolName: (exposed) => tools.names.get(exposed),
    close: () => rpc.close(),
  };
}
