/**
 * @module ResourceSource over one MCP connection: the same connection serves tools and
 * resources. Reads here go straight to the server (the paged resource stream passes
 * per-read `arguments`); the cached path is ResourceCache.
 */
import type { McpConnection } from './connection.ts';
import { uriCovers } from './resource-uri.ts';
import type {
  ReadResourceOptions,
  ResourceContents,
  ResourceInfo,
  ResourceSource,
  ResourceTemplateInfo,
} from './contract/tool-source.ts';

/** Creates the ResourceSource for one connection. Methods throw VoiceError on failure. */
export function createMcpResourceSource(conn: McpConnection): ResourceSource {
  return {
    listResources: (signal?: AbortSignal): Promise<ResourceInfo[]> => conn.listResources(signal),
    listResourceTemplates: (signal?: AbortSignal): Promise<ResourceTemplateInfo[]> =>
      conn.listResourceTemplates(signal),
    readResource: (uri: string, opts: ReadResourceOptions = {}): Promise<ResourceContents[]> =>
      conn.readResource(uri, opts),
    async subscribe(uri: string, onUpdate: () => void): Promise<() => Promise<void>> {
      // Listen before subscribing so an update sent right after the subscribe reply is not missed.
      const off = conn.onResourceUpdated((u) => {
        // The subscribed resource or a sub-resource of it (spec), never a sibling sharing a prefix.
        if (uriCovers(uri, u)) onUpdate();
      });
      try {
        await conn.subscribeResource(uri);
      } catch (err) {
        off();
        throw err;
      }
      return async () => {
        off();
        await conn.unsubscribeResource(uri);
      };
    },
  };
}
