/** @module The bridge hub the configuration's `mcpEndpoint` block describes, shared with the other replicas through the store. */
import type { Logger } from '../../core/logger.ts';
import type { McpRelay } from '../../store/mcp-endpoint-relay.ts';
import { BridgeHub } from './hub.ts';
import type { McpEndpointLimits } from './limits.ts';

/** With `relay` (the store's), bridges serve the devices of every replica on the same database. */
export function bridgeHubFor(
  config: { mcpEndpoint: McpEndpointLimits & { publicUrl: string } },
  log: Logger,
  relay?: McpRelay,
): BridgeHub {
  const { publicUrl: _url, ...limits } = config.mcpEndpoint;
  return new BridgeHub(limits, log, relay ? { relay } : undefined);
}
