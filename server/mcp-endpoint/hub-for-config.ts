/** @module The bridge hub the configuration's `mcpEndpoint` block describes. */
import type { Logger } from '../../core/logger.ts';
import type { Config } from '../config.ts';
import { BridgeHub } from './hub.ts';

export function bridgeHubFor(config: Config, log: Logger): BridgeHub {
  const { publicUrl: _url, ...limits } = config.mcpEndpoint;
  return new BridgeHub(limits, log);
}
