/**
 * @module An agent's tool policy applied to a session's tool sources: the local tools and the MCP
 * servers it does not list are neither offered to the model nor callable. The policy is read at
 * every listing and call, so a change of the device's agent applies from its next turn.
 */
import type { McpToolSource } from '../../mcp/mcp-tool-source.ts';
import { errorResult, type ToolSource } from '../../mcp/contract/tool-source.ts';
import type { ToolPolicy } from '../../voice/conversation/turn-profile.ts';

/** `source` with only the tools `allowed` accepts (by exposed name), asked at each call. */
export function filteredTools(source: ToolSource, allowed: (name: string) => boolean): ToolSource {
  return {
    listTools: async (signal) => (await source.listTools(signal)).filter((t) => allowed(t.name)),
    callTool: (name, args, opts) =>
      allowed(name)
        ? source.callTool(name, args, opts)
        : Promise.resolve(errorResult(`Unknown tool "${name}". Use one of the listed tools.`)),
  };
}

/** The local tools the current policy lists (all when it lists none). */
export function localToolsUnder(source: ToolSource, policy: () => ToolPolicy | undefined): ToolSource {
  return filteredTools(source, (name) => {
    const local = policy()?.local;
    return local === undefined || local.includes(name);
  });
}

/** The MCP tools of the servers the current policy lists (all when it lists none). */
export function mcpToolsUnder(source: McpToolSource, policy: () => ToolPolicy | undefined): ToolSource {
  return filteredTools(source, (name) => {
    const servers = policy()?.mcpServers;
    if (servers === undefined) return true;
    const server = source.serverOf(name);
    return server !== undefined && servers.includes(server);
  });
}
