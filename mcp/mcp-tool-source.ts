/**
 * @module McpToolSource: every configured MCP server's tools as one ToolSource, exposed
 * as `<server>__<tool>` made safe for OpenAI function names and mapped back on call. A catalog is
 * shared process-wide; each session gets its own view (`McpToolSource`) that remembers which
 * resource URIs its tool results linked, for the `resources_read` policy.
 */
import type { Logger } from '../core/logger.ts';
import type { McpConnection } from './connection.ts';
import { linkedUris } from './normalize.ts';
import { ToolNameMap } from './name-patterns.ts';
import type { ResourceCache } from './resource-cache.ts';
import {
  RESOURCE_TOOL_KINDS,
  SessionUris,
  callResourceTool,
  resourceToolSpec,
  type ResourceToolKind,
} from './resource-tools.ts';
import type { CallToolOptions, ToolResult, ToolSource, ToolSpec } from './contract/tool-source.ts';
import { errorResult } from './contract/tool-source.ts';

/** What an exposed name routes to. */
export interface McpToolTarget {
  conn: McpConnection;
  /** The server-side tool name, or the generated resource tool's kind. */
  tool: string;
  kind: 'tool' | ResourceToolKind;
  spec: ToolSpec;
}

/** Separator between server and tool in exposed names. */
export const SERVER_TOOL_SEPARATOR = '__';

/** The shared name map over all connections, rebuilt when any tool list or readiness changes. */
export class McpToolCatalog {
  #conns: McpConnection[];
  #signature = '';
  #map = new ToolNameMap<McpToolTarget>();

  constructor(conns: McpConnection[]) {
    this.#conns = conns;
  }

  #currentSignature(): string {
    return this.#conns.map((c) => `${c.name}:${c.toolsVersion}:${c.capabilities().resources ? 1 : 0}`).join('|');
  }

  #rebuild(): void {
    const sig = this.#currentSignature();
    if (sig === this.#signature) return;
    const map = new ToolNameMap<McpToolTarget>();
    // Real tools first so they keep plain names if a generated name collides.
    for (const conn of this.#conns) {
      for (const t of conn.tools()) {
        const target: McpToolTarget = {
          conn,
          tool: t.name,
          kind: 'tool',
          spec: { name: '', inputSchema: t.inputSchema },
        };
        const name = map.add(`${conn.name}${SERVER_TOOL_SEPARATOR}${t.name}`, target);
        target.spec =
          t.description === undefined
            ? { name, inputSchema: t.inputSchema }
            : { name, description: t.description, inputSchema: t.inputSchema };
      }
    }
    for (const conn of this.#conns) {
      if (!conn.config.resources?.tools || !conn.capabilities().resources) continue;
      for (const kind of RESOURCE_TOOL_KINDS) {
        const base = resourceToolSpec(kind, conn.name);
        const target: McpToolTarget = { conn, tool: kind, kind, spec: { name: '', ...base } };
        target.spec = { ...base, name: map.add(`${conn.name}${SERVER_TOOL_SEPARATOR}${kind}`, target) };
      }
    }
    this.#map = map;
    this.#signature = sig;
  }

  /** Specs of every tool whose server is connected now. */
  specs(): ToolSpec[] {
    this.#rebuild();
    const out: ToolSpec[] = [];
    for (const name of this.#map.names()) {
      const t = this.#map.get(name);
      if (t && t.conn.state === 'ready') out.push(t.spec);
    }
    return out;
  }

  /** Maps an exposed name back to its server and tool. */
  resolve(name: string): McpToolTarget | undefined {
    this.#rebuild();
    return this.#map.get(name);
  }
}

export interface McpToolSourceOptions {
  catalog: McpToolCatalog;
  cache: ResourceCache;
  log: Logger;
}

/** One session's view of all MCP servers' tools. Never throws from callTool. */
export class McpToolSource implements ToolSource {
  #catalog: McpToolCatalog;
  #cache: ResourceCache;
  #log: Logger;
  readonly uris = new SessionUris();

  constructor(opts: McpToolSourceOptions) {
    this.#catalog = opts.catalog;
    this.#cache = opts.cache;
    this.#log = opts.log;
  }

  async listTools(signal?: AbortSignal): Promise<ToolSpec[]> {
    signal?.throwIfAborted();
    return this.#catalog.specs();
  }

  /** The MCP server an exposed tool name belongs to (what an agent's tool policy is written in). */
  serverOf(name: string): string | undefined {
    return this.#catalog.resolve(name)?.conn.name;
  }

  async callTool(name: string, args: Record<string, unknown>, opts: CallToolOptions): Promise<ToolResult> {
    const target = this.#catalog.resolve(name);
    if (!target) return errorResult(`Unknown tool "${name}". Use one of the listed tools.`);
    if (typeof args !== 'object' || args === null || Array.isArray(args)) {
      return errorResult(`Tool "${name}" needs its arguments as a JSON object.`);
    }
    const { conn } = target;
    if (target.kind !== 'tool') {
      const started = performance.now();
      const r = await callResourceTool(target.kind, conn, this.#cache, this.uris, args, opts.signal);
      this.#log.info(
        { server: conn.name, tool: target.kind, ms: Math.round(performance.now() - started), isError: r.isError },
        'mcp resource tool called',
      );
      return r;
    }
    const started = performance.now();
    const result = await conn.callTool(
      target.tool,
      args,
      opts.timeoutMs === undefined ? { signal: opts.signal } : { signal: opts.signal, timeoutMs: opts.timeoutMs },
    );
    this.#log.info(
      { server: conn.name, tool: target.tool, ms: Math.round(performance.now() - started), isError: result.isError },
      'mcp tool called',
    );
    const uris = linkedUris(result);
    if (uris.length > 0) this.uris.add(conn.name, uris);
    // The dispatcher reads linked resources (e.g. paged audio) from the server that made them.
    result.resources = conn.resources;
    return result;
  }
}
