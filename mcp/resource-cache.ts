/**
 * @module ResourceCache: resource reads shared by every session, LRU-bounded. A cached
 * read is watched by a `resources/updated` subscription when the server supports it (subscribed
 * before the read; dropped with the entry), and otherwise expires after the server's
 * `cacheTtlMs`; `useCache: false` bypasses it. Updates, `resources/list_changed` and reconnects
 * invalidate. Rendering for the model keeps small text inline and
 * turns larger text and blobs into a short stub with size and mime type.
 */
import type { Logger } from '../core/logger.ts';
import type { McpConnection } from './connection.ts';
import { updateConcerns } from './resource-uri.ts';
import type { ResourceContents, ResourceInfo } from './contract/tool-source.ts';

export interface ResourceCacheOptions {
  log: Logger;
  /** Most entries kept (LRU beyond). */
  maxEntries?: number;
  /** Most characters (text + base64) kept across all entries. */
  maxChars?: number;
  /** Clock for expiry (tests). */
  now?: () => number;
}

export interface CacheReadOptions {
  signal?: AbortSignal;
  /** false: read from the server now and refresh the entry (the resource tool's `use_cache: false`). */
  useCache?: boolean;
}

interface Entry {
  server: string;
  uri: string;
  contents: ResourceContents[];
  chars: number;
  /** Infinity while a subscription watches the resource; else when the read stops being fresh. */
  expiresAt: number;
}

/** One read in flight; set when an update that concerns it arrives before its answer. */
interface InFlight {
  uri: string;
  dirty: boolean;
}

const DEFAULT_TTL_MS = 60_000;

function contentChars(contents: ResourceContents[]): number {
  return contents.reduce((n, c) => n + (c.text?.length ?? 0) + (c.blob?.length ?? 0), 0);
}

export class ResourceCache {
  #log: Logger;
  #maxEntries: number;
  #maxChars: number;
  #now: () => number;
  #entries = new Map<string, Entry>();
  #chars = 0;
  #lists = new Map<string, ResourceInfo[]>();
  /** Server → URIs we hold a subscription for (server-side state of the current connection). */
  #subscribed = new Map<string, Set<string>>();
  #conns = new Map<string, McpConnection>();
  #inFlight = new Map<string, Set<InFlight>>();

  constructor(opts: ResourceCacheOptions) {
    this.#log = opts.log;
    this.#maxEntries = opts.maxEntries ?? 256;
    this.#maxChars = opts.maxChars ?? 4_000_000;
    this.#now = opts.now ?? Date.now;
  }

  /** Wires a connection's notifications to invalidation; called once per connection. */
  watch(conn: McpConnection): void {
    if (this.#conns.has(conn.name)) return;
    this.#conns.set(conn.name, conn);
    conn.onResourceUpdated((uri) => this.invalidate(conn.name, uri));
    conn.onResourcesListChanged(() => this.invalidateServer(conn.name));
    conn.onStateChange((c) => {
      // Subscriptions live in the server-side session: a new connection has none, so entries
      // that relied on one can no longer be trusted.
      if (c.state !== 'ready' && this.#subscribed.delete(conn.name)) this.invalidateServer(conn.name);
    });
  }

  get size(): number {
    return this.#entries.size;
  }

  /** True when this server/uri is cached and fresh now (for tests and diagnostics). */
  has(server: string, uri: string): boolean {
    const e = this.#entries.get(key(server, uri));
    return e !== undefined && e.expiresAt > this.#now();
  }

  /**
   * Reads through the cache. On a miss it subscribes first (when the server and the config allow),
   * then reads, so an update that lands while the read is in flight is seen: that read is then
   * done once more. A read that a subscription does not watch stays fresh for `cacheTtlMs`.
   */
  async read(conn: McpConnection, uri: string, opts: CacheReadOptions = {}): Promise<ResourceContents[]> {
    const k = key(conn.name, uri);
    const hit = this.#entries.get(k);
    if (hit && hit.expiresAt > this.#now() && opts.useCache !== false) {
      conn.stats.cacheHits++;
      this.#entries.delete(k);
      this.#entries.set(k, hit); // most recently used last
      this.#log.debug({ server: conn.name, uri }, 'mcp resource cache hit');
      return hit.contents;
    }
    conn.stats.cacheMisses++;
    this.#log.debug({ server: conn.name, uri, bypass: opts.useCache === false }, 'mcp resource cache miss');
    await this.#maybeSubscribe(conn, uri, opts.signal);
    const flight: InFlight = { uri, dirty: false };
    let flights = this.#inFlight.get(conn.name);
    if (!flights) this.#inFlight.set(conn.name, (flights = new Set()));
    flights.add(flight);
    try {
      let contents = await conn.readResource(uri, opts.signal ? { signal: opts.signal } : {});
      if (flight.dirty) {
        // Changed while we read it: once more, and keep it only if it held still this time.
        this.#log.debug({ server: conn.name, uri }, 'mcp resource changed during its read; reading again');
        flight.dirty = false;
        contents = await conn.readResource(uri, opts.signal ? { signal: opts.signal } : {});
      }
      if (!flight.dirty) this.#store(conn, uri, contents);
      return contents;
    } finally {
      flights.delete(flight);
      if (!this.#entries.has(k)) this.#unsubscribe(conn.name, uri);
    }
  }

  /** The server's full resource list, cached until list_changed or a reconnect. */
  async list(conn: McpConnection, signal?: AbortSignal): Promise<ResourceInfo[]> {
    const cached = this.#lists.get(conn.name);
    if (cached) return cached;
    const list = await conn.listResources(signal);
    this.#lists.set(conn.name, list);
    return list;
  }

  #isSubscribed(server: string, uri: string): boolean {
    return this.#subscribed.get(server)?.has(uri) ?? false;
  }

  async #maybeSubscribe(conn: McpConnection, uri: string, signal?: AbortSignal): Promise<void> {
    if (conn.config.resources?.subscribe === false || !conn.capabilities().subscribe) return;
    if (this.#isSubscribed(conn.name, uri)) return;
    try {
      await conn.subscribeResource(uri, signal);
      let set = this.#subscribed.get(conn.name);
      if (!set) this.#subscribed.set(conn.name, (set = new Set()));
      set.add(uri);
    } catch (err) {
      this.#log.debug(
        { server: conn.name, uri, err: err instanceof Error ? err.message : String(err) },
        'mcp resource subscribe failed',
      );
    }
  }

  /** Forgets our subscription and tells the server (in the background: nobody waits for it). */
  #unsubscribe(server: string, uri: string): void {
    const set = this.#subscribed.get(server);
    if (!set?.delete(uri)) return;
    // A read of the same resource in flight still wants it.
    if ([...(this.#inFlight.get(server) ?? [])].some((f) => f.uri === uri)) {
      set.add(uri);
      return;
    }
    const conn = this.#conns.get(server);
    if (!conn) return;
    conn.unsubscribeResource(uri).catch((err: unknown) => {
      this.#log.debug(
        { server, uri, err: err instanceof Error ? err.message : String(err) },
        'mcp resource unsubscribe failed',
      );
    });
  }

  #store(conn: McpConnection, uri: string, contents: ResourceContents[]): void {
    const chars = contentChars(contents);
    const watched = this.#isSubscribed(conn.name, uri);
    const ttl = conn.config.resources?.cacheTtlMs ?? DEFAULT_TTL_MS;
    if (chars > this.#maxChars || (!watched && ttl <= 0)) return; // not kept at all
    const k = key(conn.name, uri);
    const old = this.#entries.get(k);
    if (old) this.#chars -= old.chars;
    this.#entries.delete(k);
    this.#entries.set(k, {
      server: conn.name,
      uri,
      contents,
      chars,
      expiresAt: watched ? Infinity : this.#now() + ttl,
    });
    this.#chars += chars;
    for (const [oldest, entry] of this.#entries) {
      if (this.#entries.size <= this.#maxEntries && this.#chars <= this.#maxChars) break;
      this.#drop(oldest, entry);
    }
  }

  /** Removes an entry; the subscription that watched it goes with it. */
  #drop(k: string, e: Entry): void {
    this.#entries.delete(k);
    this.#chars -= e.chars;
    this.#unsubscribe(e.server, e.uri);
  }

  /**
   * Drops what a `resources/updated` concerns: the resource itself, and (the spec lets servers
   * notify sub-resources) resources above or below it on a path boundary. Reads in flight for
   * such a resource are marked so they read again.
   */
  invalidate(server: string, uri: string): void {
    for (const f of this.#inFlight.get(server) ?? []) if (updateConcerns(uri, f.uri)) f.dirty = true;
    for (const [k, e] of this.#entries) {
      if (e.server === server && updateConcerns(uri, e.uri)) {
        this.#drop(k, e);
        this.#log.debug({ server, uri: e.uri }, 'mcp resource cache invalidated');
      }
    }
  }

  /** Drops everything cached for a server (list_changed, reconnect). */
  invalidateServer(server: string): void {
    this.#lists.delete(server);
    for (const f of this.#inFlight.get(server) ?? []) f.dirty = true;
    for (const [k, e] of this.#entries) if (e.server === server) this.#drop(k, e);
  }

  /** Forgets everything without telling servers (the connections are closing). */
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
