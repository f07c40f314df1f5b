/**
 * @module The optional generated resource tools (as penguiflow exposes them):
 * `<server>__resources_list`, `<server>__resources_read`, `<server>__resources_templates_list`.
 * `resources_read` is the security boundary: it accepts only URIs the server listed, or linked in
 * this session, or that match one of its RFC 6570 templates (expanded by us); everything else is
 * refused with an error result that says why. We never dereference a URI ourselves: the server does.
 */
import { UriTemplate } from '@modelcontextprotocol/sdk/shared/uriTemplate.js';
import type { McpConnection } from './connection.ts';
import { renderContentsForModel, type ResourceCache } from './resource-cache.ts';
import type { ResourceTemplateInfo, ToolResult, ToolSpec } from './contract/tool-source.ts';
import { errorResult, textResult } from './contract/tool-source.ts';

export const RESOURCE_TOOL_KINDS = ['resources_list', 'resources_read', 'resources_templates_list'] as const;
export type ResourceToolKind = (typeof RESOURCE_TOOL_KINDS)[number];

/** URIs one session has seen per server (from list results, resource links and embedded resources). */
export class SessionUris {
  #byServer = new Map<string, Set<string>>();

  add(server: string, uris: Iterable<string>): void {
    let set = this.#byServer.get(server);
    if (!set) {
      set = new Set();
      this.#byServer.set(server, set);
    }
    for (const u of uris) {
      // Bounded: a chatty server cannot grow a session without limit.
      if (set.size >= 5000) return;
      set.add(u);
    }
  }

  has(server: string, uri: string): boolean {
    return this.#byServer.get(server)?.has(uri) ?? false;
  }
}

/** Tool specs for one server's generated resource tools (unprefixed names; the catalog prefixes them). */
export function resourceToolSpec(kind: ResourceToolKind, server: string): Omit<ToolSpec, 'name'> {
  switch (kind) {
    case 'resources_list':
      return {
        description: `List resources (documents, data) that MCP server "${server}" offers. Returns one page; pass the returned cursor to get the next page.`,
        inputSchema: {
          type: 'object',
          properties: { cursor: { type: 'string', description: 'Cursor from a previous page' } },
        },
      };
    case 'resources_templates_list':
      return {
        description: `List the URI templates of MCP server "${server}" (RFC 6570), for resources addressed by parameters.`,
        inputSchema: { type: 'object', properties: {} },
      };
    case 'resources_read':
      return {
        description: `Read a resource of MCP server "${server}": give a uri it listed or linked, or a uriTemplate from its templates list plus variables.`,
        inputSchema: {
          type: 'object',
          properties: {
            uri: { type: 'string', description: 'A resource URI that the server listed or linked' },
            uriTemplate: { type: 'string', description: 'A template from resources_templates_list (instead of uri)' },
            variables: {
              type: 'object',
              description: 'Values for the template variables',
              additionalProperties: { type: 'string' },
            },
            use_cache: {
              type: 'boolean',
              description: 'false reads the current version from the server instead of a cached copy (default true)',
            },
          },
        },
      };
  }
}

const MAX_URI = 2048;

/** Structural checks before any policy: length, control characters, `..` segments (raw or encoded). */
export function uriShapeProblem(uri: string): string | undefined {
  if (uri.length === 0 || uri.length > MAX_URI) return 'the uri is empty or too long';
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(uri)) return 'the uri contains control characters';
  let decoded = uri;
  try {
    decoded = decodeURIComponent(uri);
  } catch {
    return 'the uri has broken percent-encoding';
  }
  if (/(^|[/\\])\.\.([/\\]|$)/.test(decoded)) return 'the uri contains a ".." path segment';
  return undefined;
}

function matchesTemplate(uri: string, templates: ResourceTemplateInfo[]): boolean {
  for (const t of templates) {
    try {
      if (new UriTemplate(t.uriTemplate).match(uri) !== null) return true;
    } catch {
      // a template the SDK cannot parse matches nothing
    }
  }
  return false;
}

/** Why a read of `uri` is refused for this session, or undefined when it is allowed. */
export async function readRefusal(
  conn: McpConnection,
  cache: ResourceCache,
  session: SessionUris,
  uri: string,
  signal?: AbortSignal,
): Promise<string | undefined> {
  const shape = uriShapeProblem(uri);
  if (shape) return shape;
  if (session.has(conn.name, uri)) return undefined;
  const listed = await cache.list(conn, signal).catch(() => []);
  if (listed.some((r) => r.uri === uri)) return undefined;
  const templates = await conn.listResourceTemplates(signal).catch(() => []);
  if (matchesTemplate(uri, templates)) return undefined;
  return `it was not listed or linked by server "${conn.name}" in this session and matches none of its URI templates`;
}

function strArg(args: Record<string, unknown>, k: string): string | undefined {
  const v = args[k];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** Runs one generated resource tool. Never throws. */
export async function callResourceTool(
  kind: ResourceToolKind,
  conn: McpConnection,
  cache: ResourceCache,
  session: SessionUris,
  args: Record<string, unknown>,
  signal: AbortSignal,
): Promise<ToolResult> {
  const tool = `${conn.name} ${kind}`;
  try {
    if (conn.state !== 'ready')
      return errorResult(`MCP server "${conn.name}" is not connected right now; try again later.`);
    if (kind === 'resources_list') {
      const page = await conn.listResourcesPage(strArg(args, 'cursor'), signal);
      session.add(
        conn.name,
        page.resources.map((r) => r.uri),
      );
      const lines = page.resources.map((r) => {
        const meta = [r.mimeType, r.size === undefined ? undefined : `${r.size} bytes`].filter(Boolean).join(', ');
        return `- ${r.uri}${r.name ? ` — ${r.title ?? r.name}` : ''}${meta ? ` (${meta})` : ''}${r.description ? `: ${r.description}` : ''}`;
      });
      const head = page.resources.length === 0 ? 'No resources.' : `${page.resources.length} resources:`;
      return textResult(
        [head, ...lines, ...(page.nextCursor ? [`More: call again with cursor "${page.nextCursor}".`] : [])].join('\n'),
      );
    }
    if (kind === 'resources_templates_list') {
      const templates = await conn.listResourceTemplates(signal);
      if (templates.length === 0) return textResult('No resource templates.');
      return textResult(
        templates
          .map(
            (t) =>
              `- ${t.uriTemplate}${t.name ? ` — ${t.name}` : ''}${t.mimeType ? ` (${t.mimeType})` : ''}${t.description ? `: ${t.description}` : ''}`,
          )
          .join('\n'),
      );
    }
    // resources_read
    let uri = strArg(args, 'uri');
    const template = strArg(args, 'uriTemplate');
    if (uri === undefined && template !== undefined) {
      const templates = await conn.listResourceTemplates(signal);
      if (!templates.some((t) => t.uriTemplate === template)) {
        return errorResult(`Refused: "${template}" is not one of server "${conn.name}"'s URI templates.`);
      }
      const vars: Record<string, string> = {};
      const rawVars = args.variables;
      if (typeof rawVars === 'object' && rawVars !== null && !Array.isArray(rawVars)) {
        for (const [k, v] of Object.entries(rawVars))
          if (typeof v === 'string' || typeof v === 'number') vars[k] = String(v);
      }
      uri = new UriTemplate(template).expand(vars);
    }
    if (uri === undefined) return errorResult(`${tool}: give "uri" (or "uriTemplate" with "variables").`);
    const refusal = await readRefusal(conn, cache, session, uri, signal);
    if (refusal) return errorResult(`Refused to read ${uri}: ${refusal}.`);
    // `use_cache: false` asks for the server's current version.
    const contents = await cache.read(conn, uri, { signal, useCache: args.use_cache !== false });
    return textResult(renderContentsForModel(contents));
  } catch (err) {
    if (signal.aborted) return errorResult(`${tool} was cancelled.`);
    return errorResult(`${tool} failed: ${err instanceof Error ? err.message : String(err)}`);
  }
}
