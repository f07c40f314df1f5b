/**
 * @module Joins several ToolSources (local tools, MCP servers, the device's tools) into the one the
 * ReAct loop sees. Sources are listed in parallel; one that fails or is slow is logged and left out
 * of that listing instead of failing the turn. On a name collision the earlier source keeps the
 * plain name and later ones are exposed as `<source>__<tool>` (calls are routed back to the
 * original name), except that a source marked `keepsNames` (the device's own tools) claims its
 * names before every other: a bridge or MCP server offering `self_audio_speaker_set_volume` must
 * not take the device's volume call.
 */
import { runScoped } from '../core/abort.ts';
import { ErrorCode, toVoiceError } from '../core/errors.ts';
import type { Logger } from '../core/logger.ts';
import { errorResult } from './tool-source.ts';
import type { CallToolOptions, ToolResult, ToolSource, ToolSpec } from './tool-source.ts';

export interface NamedToolSource {
  /** Short id used in logs and collision prefixes (e.g. `local`, `device`, `weather`). */
  name: string;
  source: ToolSource;
  /** Its tools keep their plain names whatever the other sources offer (the device's own tools). */
  keepsNames?: boolean;
}

export interface CompositeToolSourceOptions {
  log: Logger;
  /** Per-source limit for `listTools`, ms. Default 5000. */
  listTimeoutMs?: number;
}

/** A ToolSource whose tool set can change between listings (sources can be added and removed). */
export interface CompositeToolSource extends ToolSource {
  add(entry: NamedToolSource): void;
  remove(name: string): void;
}

const MAX_NAME = 64;

function safe(s: string): string {
  return s.replace(/[^a-zA-Z0-9_-]/g, '_');
}

export function createCompositeToolSource(sources: readonly NamedToolSource[], opts: CompositeToolSourceOptions): CompositeToolSource {
  const log = opts.log;
  const listTimeoutMs = opts.listTimeoutMs ?? 5000;
  let entries: NamedToolSource[] = [...sources];
  /** Exposed name → where to call it; rebuilt by each listing. */
  let routes = new Map<string, { entry: NamedToolSource; original: string }>();
  let listed = false;

  async function listTools(signal?: AbortSignal): Promise<ToolSpec[]> {
    const current = [...entries];
    const lists = await Promise.all(
      current.map(async (entry) => {
        try {
          return await runScoped(signal, (s) => entry.source.listTools(s), { timeoutMs: listTimeoutMs, what: `listTools ${entry.name}` });
        } catch (err) {
          const e = toVoiceError(err);
          if (e.code === ErrorCode.Aborted) throw e;
          log.warn({ source: entry.name, code: e.code, err: e.message }, 'tool source failed to list tools; skipped');
          return [];
        }
      }),
    );
    const next = new Map<string, { entry: NamedToolSource; original: string }>();
    // The sources that keep their names claim them first; the output stays in source order.
    const claimed = new Set<string>();
    current.forEach((entry, i) => {
      if (entry.keepsNames) for (const spec of lists[i] ?? []) claimed.add(spec.name);
    });
    const out: ToolSpec[] = [];
    current.forEach((entry, i) => {
      for (const spec of lists[i] ?? []) {
        let exposed = spec.name;
        if (next.has(exposed) || (!entry.keepsNames && claimed.has(exposed))) {
          const prefixed = `${safe(entry.name)}__${spec.name}`.slice(0, MAX_NAME);
          log.warn({ source: entry.name, tool: spec.name, exposedAs: prefixed }, 'tool name collision; renamed');
          exposed = prefixed;
          // Still taken (same name twice in one source, or an unlucky prefix): drop the duplicate.
          if (next.has(exposed) || claimed.has(exposed)) continue;
        }
        next.set(exposed, { entry, original: spec.name });
        out.push(exposed === spec.name ? spec : { ...spec, name: exposed });
      }
    });
    routes = next;
    listed = true;
    return out;
  }

  return {
    listTools,
    async callTool(name: string, args: Record<string, unknown>, callOpts: CallToolOptions): Promise<ToolResult> {
      if (!listed) await listTools(callOpts.signal);
      const route = routes.get(name);
      if (!route) return errorResult(`Unknown tool "${name}".`);
      try {
        return await route.entry.source.callTool(route.original, args, callOpts);
      } catch (err) {
        const e = toVoiceError(err, ErrorCode.ToolFailed);
        if (e.code === ErrorCode.Aborted || callOpts.signal.aborted) throw e;
        log.warn({ source: route.entry.name, tool: route.original, code: e.code, err: e.message }, 'tool call threw');
        return errorResult(`Tool "${name}" failed: ${e.message}`);
      }
    },
    add(entry) {
      entries = [...entries.filter((e) => e.name !== entry.name), entry];
      listed = false;
    },
    remove(name) {
      entries = entries.filter((e) => e.name !== name);
      listed = false;
    },
  };
}
