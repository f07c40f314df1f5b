/**
 * @module The `mcpServers` config block: the shape Claude Desktop, Cursor and other MCP hosts use
 * (`command`/`args`/`env`/`cwd` for a local process, `url`/`headers`/`transport` for a remote
 * server), plus our own optional keys for tool filtering, timeouts and resource handling.
 * Values are taken literally: `${VAR}` expansion, if any, is server/config.ts's job.
 */
import { z } from 'zod';

/** Per-server resource handling: context read before Think, and the generated resource tools. */
export const McpResourcesConfigSchema = z
  .object({
    /** What to read and inject as context before Think: nothing, everything listed, or URI globs. */
    context: z.union([z.literal('none'), z.literal('all'), z.array(z.string().min(1))]).default('none'),
    /** Max characters of resource text this server may inject per turn. */
    budgetChars: z.number().int().min(0).default(4000),
    /** Expose `<server>__resources_list`, `__resources_read`, `__resources_templates_list` to the LLM. */
    tools: z.boolean().default(false),
    /** Subscribe to cached resources when the server supports it (updates invalidate the cache). */
    subscribe: z.boolean().default(true),
    /**
     * How long a cached read of this server stays fresh when no subscription watches it (the
     * server cannot subscribe, or `subscribe: false`), in ms; 0 never caches such reads.
     */
    cacheTtlMs: z.number().int().min(0).default(60_000),
  })
  .strict();

const commonShape = {
  /** false keeps the entry in the file without starting it. */
  enabled: z.boolean().default(true),
  /** Only these tools (exact names or globs with `*` and `?`); all when absent. */
  includeTools: z.array(z.string().min(1)).optional(),
  /** Tools hidden from the LLM (names or globs); applied after includeTools. */
  excludeTools: z.array(z.string().min(1)).optional(),
  /** Per-call timeout in ms (reset by progress notifications). */
  timeoutMs: z.number().int().positive().default(30_000),
  resources: McpResourcesConfigSchema.optional(),
};

/** A server started as a child process speaking MCP over stdio. */
export const McpStdioServerConfigSchema = z
  .object({
    command: z.string().min(1),
    args: z.array(z.string()).default([]),
    /** Extra environment for the child, on top of a minimal safe set (HOME, PATH, ...); never our whole env. */
    env: z.record(z.string(), z.string()).optional(),
    cwd: z.string().min(1).optional(),
    ...commonShape,
  })
  .strict();

/** A server reached over HTTP: streamable HTTP, legacy SSE, or auto (streamable first, SSE on 400/404/405). */
export const McpHttpServerConfigSchema = z
  .object({
    url: z.url({ protocol: /^https?$/ }),
    headers: z.record(z.string(), z.string()).optional(),
    transport: z.enum(['streamable-http', 'sse', 'auto']).default('auto'),
    ...commonShape,
  })
  .strict();

/** One entry of `mcpServers`: either a local command or a URL. */
export const McpServerConfigSchema = z.union([McpStdioServerConfigSchema, McpHttpServerConfigSchema], {
  error: (issue) =>
    issue.code === 'invalid_union'
      ? 'an MCP server needs either "command" (stdio) or "url" (HTTP), with only the documented keys'
      : undefined,
});

/** The whole `mcpServers` block: server name → entry. */
export const McpServersConfigSchema = z.record(z.string().min(1), McpServerConfigSchema);

export type McpResourcesConfig = z.infer<typeof McpResourcesConfigSchema>;
export type McpStdioServerConfig = z.infer<typeof McpStdioServerConfigSchema>;
export type McpHttpServerConfig = z.infer<typeof McpHttpServerConfigSchema>;
export type McpServerConfig = z.infer<typeof McpServerConfigSchema>;
export type McpServersConfig = z.infer<typeof McpServersConfigSchema>;
/** What a user writes (defaults not yet applied). */
export type McpServersConfigInput = z.input<typeof McpServersConfigSchema>;

/** True for a stdio (command) entry. */
export function isStdioConfig(c: McpServerConfig): c is McpStdioServerConfig {
  return 'command' in c;
}

/**
 * Parses an `mcpServers` block. Throws a Error whose message names each bad key as a dotted path
 * (`mcpServers.weather.timeoutMs: ...`), so a config mistake is found at once.
 */
export function parseMcpServersConfig(input: unknown): McpServersConfig {
  const r = McpServersConfigSchema.safeParse(input);
  if (r.success) return r.data;
  throw new Error(formatConfigIssues(r.error, 'mcpServers'));
}

/** Formats zod issues as `prefix.path: message` lines; for union failures it names the closest branch's keys. */
export function formatConfigIssues(error: z.ZodError, prefix: string): string {
  const lines: string[] = [];
  const walk = (issues: readonly z.core.$ZodIssue[], base: PropertyKey[]): void => {
    for (const issue of issues) {
      const path = [...base, ...issue.path];
      if (issue.code === 'invalid_union' && issue.errors.length > 0) {
        // Report the branch with the fewest problems: the one the user most likely meant.
        const best = [...issue.errors].sort((a, b) => a.length - b.length)[0] ?? [];
        lines.push(`${[prefix, ...path.map(String)].join('.')}: ${issue.message}`);
        walk(best, path);
        continue;
      }
      lines.push(`${[prefix, ...path.map(String)].join('.')}: ${issue.message}`);
    }
  };
  walk(error.issues, []);
  return lines.join('\n');
}
