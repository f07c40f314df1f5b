/**
 * @module Joins several ToolSources (local tools, MCP servers, the device's tools) into the one the
 * ReAct loop sees. Sources are listed in parallel; one that fails or is slow is logged and left out
 * of that listing instead of failing the turn. Names are merged by `merge-tool-names.ts`: on a
 * collision the earlier source keeps the plain name and later ones are exposed as
 * `<source>__<tool>` (calls are routed back to the original name), except that a source marked
 * `keepsNames` (the device's own tools) claims its names before every other: a bridge or MCP
 * server offering `self_audio_speaker_set_volume` must not take the device's volume call.
 */
import { runScoped } from '../core/abort.ts';
import { ErrorCode, toVoiceError } from '../core/errors.ts';
import type { Logger } from '../core/logger.ts';
import { mergeToolNames } from './merge-tool-names.ts';
import { errorResult } from './contract/tool-source.ts';
import type { CallToolOptions, ToolResult, ToolSource, ToolSpec } from './contract/tool-source.ts';

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

export function createCompositeToolSource(
  sources: readonly NamedToolSource[],
  opts: CompositeToolSourceOptions,
): CompositeToolSource {
  const log = opts.log;
  const listTimeoutMs = opts.listTimeoutMs ?? 5000;
  let entries: NamedToolSource[] = [...sources];
  /** Exposed name → where to call it; rebuilt by each listing. */
  let routes = new Map<string, { group: NamedToolSource; original: string }>();
  let listed = false;

  async function listTools(signal?: AbortSignal): Promise<ToolSpec[]> {
    const current = [...entries];
    const lists = await Promise.all(
      current.map(async (entry) => {
        try {
          return await runScoped(signal, (s) => entry.source.listTools(s), {
            timeoutMs: listTimeoutMs,
            what: `listTools ${entry.name}`,
          });
        } catch (err) {
          const e = toVoiceError(err);
          if (e.code === ErrorCode.Aborted) throw e;
          log.warn({ source: entry.name, code: e.code, err: e.message }, 'tool source failed to list tools; skipped');
          return [];
        }
      }),
    );
    const merged = mergeToolNames(
      current.map((entry, i) => ({
        name: entry.name,
        specs: lists[i] ?? [],
        group: entry,
        ...(entry.keepsNames ? { keepsNames: true } : {}),
      })),
    );
    for (const r of merged.renamed)
      log.warn({ source: r.group, tool: r.tool, exposedAs: r.exposedAs }, 'tool name collision; renamed');
    routes = merged.routes;
    listed = true;
    return merged.specs;
  }

  return {
    listTools,
    async callTool(name: string, args: Record<string, unknown>, callOpts: CallToolOptions): Promise<ToolResult> {
      if (!listed) await listTools(callOpts.signal);
      const route = routes.get(name);
      if (!route) return errorResult(`Unknown tool "${name}".`);
      try {
        return await route.group.source.callTool(route.original, args, callOpts);
      } catch (err) {
        const e = toVoiceError(err, ErrorCode.ToolFailed);
        if (e.code === ErrorCode.Aborted || callOpts.signal.aborted) throw e;
        log.warn({ source: route.group.name, tool: route.original, code: e.code, err: e.message }, 'tool call threw');
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
