/**
 * @module The MCP endpoint's bounds (the `mcpEndpoint` configuration block): every one a bridge
 * can reach is refused with a JSON-RPC error, a close code with a reason, or a dropped tool, and
 * nothing else is affected.
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
};

/**
 * Whether a schema stays within the depth and node bounds, walked without recursion (a schema
 * 30,000 levels deep must not overflow the stack). Returns why not, or undefined.
 */
export function schemaOverLimits(schema: unknown, maxDepth: number, maxNodes: number): string | undefined {
  const stack: Array<[unknown, number]> = [[schema, 1]];
  let nodes = 0;
  while (stack.length > 0) {
    const [v, depth] = stack.pop() as [unknown, number];
    if (++nodes > maxNodes) return `more than ${maxNodes} values`;
    if (typeof v !== 'object' || v === null) continue;
    if (depth > maxDepth) return `nested deeper than ${maxDepth}`;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth + 1]);
  }
  return undefined;
}
