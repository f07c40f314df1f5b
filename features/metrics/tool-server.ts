/**
 * @module Which source a tool call went to, from the name the model used: MCP tools are exposed
 * as `<server>__<tool>`, the device's own tools as `self_*`, everything else is a local tool.
 * Only configured server names become label values, so a model inventing names cannot grow the
 * metric's label set without bound.
 */

/** The `server` label for a tool call: a configured MCP server, `device`, `local` or `unknown`. */
export function toolServer(name: string, mcpServers: ReadonlySet<string>): string {
  const cut = name.indexOf('__');
  if (cut > 0) {
    const prefix = name.slice(0, cut);
    if (mcpServers.has(prefix)) return prefix;
    // A collision renamed an MCP tool to `mcp__<server>__<tool>`.
    if (prefix === 'mcp') return toolServer(name.slice(cut + 2), mcpServers);
    // Collision prefixes from the composite source (`local__x`, `device__x`).
    if (prefix === 'local' || prefix === 'device') return prefix;
    return 'unknown';
  }
  if (name.startsWith('self_') || name.startsWith('self.')) return 'device';
  return 'local';
}
