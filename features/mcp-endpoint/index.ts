/**
 * @module The MCP endpoint room's public surface: the `/mcp/` route users' bridges dial in at, and
 * the hub that keeps them by agent and gives each session its agent's bridge tools. Its rows:
 * store/mcp-endpoint-relay.ts and store/mcp-endpoint-tokens.ts.
 */
export type { BridgeHub } from './hub.ts';
export { bridgeHubFor } from './hub-for-config.ts';
export { MCP_ENDPOINT_PATH, mcpEndpointRoute, type McpEndpointRouteOptions } from './route.ts';
export type { McpEndpointLimits } from './limits.ts';
export { McpEndpointSchema } from './mcp-endpoint-settings.ts';
