/**
 * @module The MCP endpoint's bounds (the `mcpEndpoint` configuration block): every one a bridge
 * can reach is refused with a JSON-RPC error, a close code with a reason, or a dropped tool, and
 * nothing else is affected. (Each announced tool is read and its schema's shape checked by
 * `mcp/announced-tool.ts`, the tools' size by `mcp/tool-budget.ts`, both shared with the device's own tools.)
 */
export interface McpEndpointLimits {
  /** Longest JSON-RPC message (text frame) from a bridge, bytes. */
  maxMessageBytes: number;
  /** Tools one bridge may offer; more closes it (1008) with the count in the reason. */
  maxToolsPerBridge: number;
  /** Bridges connected at once per agent (token); one more is closed (1008). */
  maxBridgesPerAgent: number;
  /** Open endpoint connections per source address (including ones still initializing). */
  maxConnectionsPerAddress: number;
  /** Tool calls in flight per bridge; one more fails at once with a "busy" result. */
  maxCallsInFlight: number;
  /** One tool call, ms. */
  callTimeoutMs: number;
  /** initialize, tools/list (each page) and ping, ms. */
  requestTimeoutMs: number;
  /** Our ping to each bridge, ms (0: never). */
  pingIntervalMs: number;
  /** Nesting depth of one tool's input schema; a deeper one drops that tool. */
  maxSchemaDepth: number;
  /** Values (objects, arrays, scalars) in one tool's input schema; more drops that tool. */
  maxSchemaNodes: number;
  /** tools/list pages followed before the listing stops. */
  maxListPages: number;
  /**
   * Bytes all of one agent's bridge tools (names, descriptions, input schemas) may take in each
   * model request; past it descriptions are cut, then tools dropped from the last (one warning).
   */
  maxToolBytes: number;
  /** Bridge tools one agent's devices are offered; past it tools are dropped from the last. */
  maxToolsPerAgent: number;
}

export const DEFAULT_MCP_ENDPOINT_LIMITS: McpEndpointLimits = {
  maxMessageBytes: 65_536,
  maxToolsPerBridge: 128,
  maxBridgesPerAgent: 8,
  maxConnectionsPerAddress: 16,
  maxCallsInFlight: 4,
  callTimeoutMs: 30_000,
  requestTimeoutMs: 10_000,
  pingIntervalMs: 30_000,
  maxSchemaDepth: 32,
  maxSchemaNodes: 2_000,
  maxListPages: 20,
  maxToolBytes: 32_768,
  maxToolsPerAgent: 64,
};
