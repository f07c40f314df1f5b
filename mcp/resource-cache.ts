/**
 * @module ResourceCache (seed 002): resource reads shared by every session, LRU-bounded, subscribed
 * to `resources/updated` when the server supports it, invalidated by updates, by
 * `resources/list_changed` and by reconnects. Rendering for the model keeps small text inline and
 * turns larger text and blobs into a short stub with size and mime type.
 */
import type { Logger } from '../core/logger.ts';
import type { McpConnection } from './connection.ts';
import type { ResourceContents, ResourceInfo } from './tool-source.ts';

export interface ResourceCacheOptions {
  log: Logger;
  /** Most entries kept (LRU beyond). */
  maxEntries?: number;
  /** Most characters (text + base64) kept across all entries. */
  maxChars?: number;
}

interface Entry {
  server: string;
  uri: string;
  contents: ResourceContents[];
  chars: number;
}

function contentChars(contents: ResourceContents[]): number {
  return contents.reduce((n, c) => n + (c.text?.length ?? 0) + (c.blob?.length ?? 0), 0);
}

export class ResourceCache {
  #log: Logger;
  #maxEntries: number;
  #maxChars: number;
  #entries = new Map<string, Entry>();
  #chars = 0;
  #lists = new Map<string, ResourceInfo[]>();
  #subscribed = new Map<string, Set<string>>();
  #watched = new Set<McpConnection>();

  constructor(opts: ResourceCacheOptions) {
    this.#log = opts.log;
    this.#maxEntries = opts.maxEntries ?? 256;
    this.#maxChars = opts.maxChars ?? 4_000_000;
  }

  /** Wires a connection's notifications to invalidation; called once per connection. */
  watch(conn: McpConnection): void {
    if (this.#watched.has(conn)) return;
    this.#watched.add(conn);
    conn.onResourceUpdated((uri) => this.invalidate(conn.name, uri));
    conn.onResourcesListChanged(() => this.invalidateServer(conn.name));
    conn.onStateChange((c) => {
      // Subscriptions live in the server-side session: a new connection has none.
      if (c.state !== 'ready') this.#subscribed.delete(conn.name);
    });
  }

  get size(): number {
    return this.#entries.size;
  }

  /** True when this server/uri is cached now (for tests and diagnostics). */
  has(server: string, uri: string): boolean {
    return this.#entries.has(key(server, uri));
  }

  /** Reads through the cache; on a miss reads from the server and subscribes when allowed. */
  async read(conn: McpConnection, uri: string, signal?: AbortSignal): Promise<ResourceContents[]> {
    const k = key(conn.name, uri);
    const hit = this.#entries.get(k);
    if (hit) {
      conn.stats.cacheHits++;
      this.#entries.delete(k);
      this.#entries.set(k, hit); // most recently used last
      this.#log.debug({ server: conn.name, uri }, 'mcp resource cache hit');
      return hit.contents;
    }
    conn.stats.cacheMisses++;
    this.#log.debug({ server: conn.name, uri }, 'mcp resource cache miss');
    const contents = await conn.readResource(uri, signal ? { signal } : {});
    await this.#maybeSubscribe(conn, uri, signal);
    this.#store({ server: conn.name, uri, contents, chars: contentChars(contents) });
    return contents;
  }

  /** The server's full resource list, cached until list_changed or a reconnect. */
  async list(conn: McpConnection, signal?: AbortSignal): Promise<ResourceInfo[]> {
    const cached = this.#lists.get(conn.name);
    if (cached) return cached;
    const list = await conn.listResources(signal);
    this.#lists.set(conn.name, list);
    return list;
  }

  async #maybeSubscribe(conn: McpConnection, uri: string, signal?: AbortSignal): Promise<void> {
    if (conn.config.resources?.subscribe === false || !conn.capabilities().subscribe) return;
    let set = this.#subscribed.get(conn.name);
    if (set?.has(uri)) return;
    try {
      await conn.subscribeResource(uri, signal);
      set ??= new Set();
      this.#subscribed.set(conn.name, set);
      set.add(uri);
    } catch (err) {
      this.#log.debug({ server: conn.name, uri, err: err instanceof Error ? err.message : String(err) }, 'mcp resource subscribe failed');
    }
  }

  #store(e: Entry): void {
    if (e.chars > this.#maxChars) return; // too big to keep at all
    const k = key(e.server, e.uri);
    const old = this.#entries.get(k);
    if (old) this.#chars -= old.chars;
    this.#entries.delete(k);
    this.#entries.set(k, e);
    this.#chars += e.chars;
    for (const [oldest, entry] of this.#entries) {
      if (this.#entries.size <= this.#maxEntries && this.#chars <= this.#maxChars) break;
      this.#entries.delete(oldest);
      this.#chars -= entry.chars;
    }
  }

  /**
   * Drops a resource after `resources/updated`. The notified uri may be a sub-resource of the one
   * we cached (spec), so prefixes in both directions are dropped.
   */
  invalidate(server: string, uri: string): void {
    for (const [k, e] of this.#entries) {
      if (e.server === server && (e.uri === uri || uri.startsWith(e.uri) || e.uri.startsWith(uri))) {
        this.#entries.delete(k);
        this.#chars -= e.chars;
        this.#log.debug({ server, uri: e.uri }, 'mcp resource cache invalidated');
      }
    }
  }

  /** Drops everything cached for a server (list_changed, reconnect). */
  invalidateServer(server: string): void {
    this.#lists.delete(server);
    for (const [k, e] of this.#entries) {
      if (e.server === server) {
        this.#entries.delete(k);
        this.#chars -= e.chars;
      }
    }
  }

  clear(): void {
    this.#entries.clear();
    this.#lists.clear();
    this.#subscribed.clear();
    this.#chars = 0;
  }
}

function key(server: string, uri: string): string {
  return `${server}\n${uri}`;
}

/** Approximate decoded size of base64 data, in bytes. */
function base64Bytes(b64: string): number {
  return Math.floor((b64.replace(/=+$/, '').length * 3) / 4);
}

/**
 * Renders read contents for the model: text up to `inlineChars` as is, larger text as a stub with
 * its size and a short preview, blobs as a stub with mime type and size (never spoken or inlined).
 */
export function renderContentsForModel(contents: ResourceContents[], inlineChars = 10_000, previewChars = 300): string {
  if (contents.length === 0) return '(empty resource)';
  return contents
    .map((c) => {
      const mime = c.mimeType ?? 'unknown type';
      if (c.text !== undefined) {
        if (c.text.length <= inlineChars) return contents.length > 1 ? `[${c.uri}]\n${c.text}` : c.text;
        return `[resource ${c.uri} (${mime}, ${c.text.length} chars) is too large to include in full; beginning: ${c.text.slice(0, previewChars)}…]`;
      }
      return `[binary resource ${c.uri} (${mime}, about ${base64Bytes(c.blob ?? '')} bytes) not shown]`;
    })
    .join('\n\n');
}
