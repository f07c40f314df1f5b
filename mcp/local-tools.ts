/**
 * @module Built-in tools behind the same `ToolSource` interface as MCP servers, so the model and
 * the dispatcher treat both alike. Each `LocalTool` has a name, description, JSON Schema and a handler;
 * arguments are checked against the schema before the handler runs, and every failure (bad
 * arguments, a throwing handler, an abort) comes back as an `isError` result, never an exception.
 * Handlers may set `action` flags (final / noFurtherResponse / silenceLLM / endSession) on results.
 */
import { ErrorCode, toVoiceError } from '../core/errors.ts';
import type { Logger } from '../core/logger.ts';
import { silentLogger } from '../core/logger.ts';
import { errorResult } from './contract/tool-source.ts';
import type { CallToolOptions, ToolResult, ToolSource, ToolSpec } from './contract/tool-source.ts';
import { validateArgs } from './local-tools/validate-args.ts';

export type { LocalTool, LocalToolContext } from './contract/local-tool.ts';
import type { LocalTool } from './contract/local-tool.ts';

export interface LocalToolsOptions {
  log?: Logger;
}

const NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * Wraps local tools as a `ToolSource`. Throws at construction on a duplicate or invalid name (a
 * programming error, not bad input).
 */
export function createLocalTools(tools: readonly LocalTool[], opts: LocalToolsOptions = {}): ToolSource {
  const log = opts.log ?? silentLogger;
  const byName = new Map<string, LocalTool>();
  for (const t of tools) {
    if (!NAME.test(t.name)) throw new Error(`local tool name "${t.name}" is not a valid function name`);
    if (byName.has(t.name)) throw new Error(`local tool "${t.name}" is defined twice`);
    byName.set(t.name, t);
  }
  return {
    async listTools(): Promise<ToolSpec[]> {
      // Descriptions are read at each listing: a tool may describe something current (the local time).
      return tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema }));
    },
    async callTool(name: string, args: Record<string, unknown>, callOpts: CallToolOptions): Promise<ToolResult> {
      const tool = byName.get(name);
      if (!tool) return errorResult(`Unknown tool "${name}".`);
      const problems = validateArgs(args ?? {}, tool.inputSchema);
      if (problems.length > 0) {
        log.warn({ tool: name, problems }, 'local tool called with bad arguments');
        return errorResult(`Invalid arguments for "${name}": ${problems.join('; ')}.`);
      }
      if (callOpts.signal.aborted) return errorResult(`Tool "${name}" was cancelled.`);
      try {
        return await tool.handler(args ?? {}, { signal: callOpts.signal, log });
      } catch (err) {
        const e = toVoiceError(err, ErrorCode.ToolFailed);
        if (e.code === ErrorCode.Aborted) return errorResult(`Tool "${name}" was cancelled.`);
        log.warn({ tool: name, code: e.code, err: e.message }, 'local tool failed');
        return errorResult(`Tool "${name}" failed: ${e.message}`);
      }
    },
  };
}

export { dateTimeTool } from './local-tools/date-time.ts';
export type { DateTimeToolOptions } from './local-tools/date-time.ts';
export { endConversationTool } from './local-tools/end-conversation.ts';
export type { EndConversationToolOptions } from './local-tools/end-conversation.ts';
