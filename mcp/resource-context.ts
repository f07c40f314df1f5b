/**
 * @module Resource context before Think: per server, a policy (`none`, `all`, or
 * URI globs) picks resources, reads them through the ResourceCache, and their text becomes context
 * blocks within the server's character budget. Blobs are skipped (nothing to say about them).
 */
import type { Logger } from '../core/logger.ts';
import { runScoped } from '../core/abort.ts';
import type { McpConnection } from './connection.ts';
import { matchesAny } from './name-patterns.ts';
import type { ResourceCache } from './resource-cache.ts';

export interface ContextBlock {
  server: string;
  uri: string;
  /** The text as injected (possibly cut to the budget). */
  text: string;
  truncated: boolean;
}

export interface BuildContextOptions {
  signal?: AbortSignal;
  /** Bound for one server's reads, in ms: context must never stall a turn for long. */
  timeoutMs?: number;
  /** Only these servers (an agent's tool policy); absent: every server. */
  servers?: readonly string[];
}

/** Formats a block as the text of one system message. */
export function formatContextBlock(b: ContextBlock): string {
  return `Context from resource ${b.uri} (MCP server "${b.server}"):\n${b.text}${b.truncated ? '\n[…truncated]' : ''}`;
}

function isGlob(p: string): boolean {
  return p.includes('*') || p.includes('?');
}

async function serverContext(
  conn: McpConnection,
  cache: ResourceCache,
  log: Logger,
  signal: AbortSignal,
): Promise<ContextBlock[]> {
  const policy = conn.config.resources?.context ?? 'none';
  let budget = conn.config.resources?.budgetChars ?? 4000;
  if (policy === 'none' || budget <= 0) return [];
  const listed = await cache.list(conn, signal);
  let uris: string[];
  if (policy === 'all') {
    uris = listed.map((r) => r.uri);
  } else {
    uris = listed.filter((r) => matchesAny(r.uri, policy)).map((r) => r.uri);
    // A literal URI (no glob) is read even if unlisted: template-backed resources often are.
    for (const p of policy) if (!isGlob(p) && !uris.includes(p)) uris.push(p);
  }
  const blocks: ContextBlock[] = [];
  for (const uri of uris) {
    if (budget <= 0) break;
    let contents;
    try {
      contents = await cache.read(conn, uri, { signal });
    } catch (err) {
      if (signal.aborted) throw err;
      log.warn(
        { server: conn.name, uri, err: err instanceof Error ? err.message : String(err) },
        'mcp context resource unreadable',
      );
      continue;
    }
    for (const c of contents) {
      if (c.text === undefined || c.text.length === 0 || budget <= 0) continue;
      const truncated = c.text.length > budget;
      const text = truncated ? c.text.slice(0, budget) : c.text;
      budget -= text.length;
      blocks.push({ server: conn.name, uri: c.uri, text, truncated });
    }
  }
  return blocks;
}

/**
 * Builds the resource context blocks for one turn from every ready server whose policy asks for
 * it. A failing server is logged and skipped; never throws except on abort of `signal`.
 */
export async function buildResourceContext(
  conns: McpConnection[],
  cache: ResourceCache,
  log: Logger,
  opts: BuildContextOptions = {},
): Promise<ContextBlock[]> {
  const wanted = conns.filter(
    (c) =>
      (opts.servers === undefined || opts.servers.includes(c.name)) &&
      c.state === 'ready' &&
      c.capabilities().resources &&
      (c.config.resources?.context ?? 'none') !== 'none',
  );
  const perServer = await Promise.all(
    wanted.map(async (conn) => {
      try {
        return await runScoped(opts.signal, (s) => serverContext(conn, cache, log, s), {
          timeoutMs: opts.timeoutMs ?? 3000,
          what: `resource context from ${conn.name}`,
        });
      } catch (err) {
        if (opts.signal?.aborted) throw err;
        log.warn(
          { server: conn.name, err: err instanceof Error ? err.message : String(err) },
          'mcp resource context skipped',
        );
        return [];
      }
    }),
  );
  return perServer.flat();
}
