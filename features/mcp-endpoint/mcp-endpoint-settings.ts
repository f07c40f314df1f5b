/**
 * @module The `mcpEndpoint` block of the configuration: the URL handed out and every bound a bridge can
 * reach. The endpoint owns its settings; server/config-schema.ts composes them into the configuration.
 */
import { z } from 'zod';

/**
 * The MCP endpoint (`/mcp/`): users' own MCP bridges dial in with an agent's token. Every bound
 * here is one a bridge can reach; a bridge over one is refused alone (an error, a close code with
 * the reason, or a tool left out). Frames are also bounded by `server.maxMessageBytes`.
 */
export const McpEndpointSchema = z.strictObject({
  /** The URL handed out (`wss://host/mcp/`); empty: built from the admin request's host. */
  publicUrl: z.string().default(''),
  maxMessageBytes: z.number().int().positive().default(65_536),
  maxToolsPerBridge: z.number().int().positive().max(10_000).default(128),
  maxBridgesPerAgent: z.number().int().positive().max(1000).default(8),
  maxConnectionsPerAddress: z.number().int().positive().default(16),
  maxCallsInFlight: z.number().int().positive().default(4),
  callTimeoutMs: z.number().int().positive().default(30_000),
  requestTimeoutMs: z.number().int().positive().default(10_000),
  pingIntervalMs: z.number().int().min(0).default(30_000),
  maxSchemaDepth: z.number().int().positive().max(1000).default(32),
  maxSchemaNodes: z.number().int().positive().default(2_000),
  maxListPages: z.number().int().positive().default(20),
  /** Bytes of one agent's bridge tools offered in each model request (as `deviceMcp.maxSchemaBytes`). */
  maxToolBytes: z.number().int().min(1024).max(1_048_576).default(32_768),
  /** Bridge tools offered per agent. */
  maxToolsPerAgent: z.number().int().positive().max(1000).default(64),
});
