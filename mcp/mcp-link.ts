/**
 * @module The link to one MCP server: opens the client over its transport, tracks its state,
 * forwards its notifications, reconnects with backoff when it dies, and closes it (killing a
 * stdio child that does not exit). Its only request is a ping when the transport reports an
 * error (is the server still there?); McpConnection (tools and resources) asks it for the current
 * client, and tells it when a request found the link broken.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  LoggingMessageNotificationSchema,
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode, VoiceError } from '../core/errors.ts';
import type { Logger } from '../core/logger.ts';
import { classifyFailure, errMessage } from './mcp-failure.ts';
import type { McpServerConfig } from './server-config.ts';
import type { McpServerState, McpServerStats, McpStateChange } from './stats.ts';
import { openClient, type ClientInfo, type McpTransportKind } from './transports.ts';

export interface ReconnectPolicy {
  /** First retry delay in ms; doubles each failure up to `maxMs`. */
  initialMs: number;
  maxMs: number;
}

export interface McpLinkOptions {
  name: string;
  config: McpServerConfig;
  /** Already bound to the server (`mcpServer: name`). */
  log: Logger;
  clientInfo: ClientInfo;
  stats: McpServerStats;
  reconnect?: ReconnectPolicy;
  /** Bound on the initialize handshake, in ms. */
  connectTimeoutMs?: number;
  /** Debounce for `tools/list_changed` bursts, in ms. */
  listChangedDebounceMs?: number;
  /** Runs after each connect, before the link reports `ready` (e.g. fetch the tool list). */
  afterConnect: () => Promise<void>;
  /** `tools/list_changed`, debounced. */
  onToolsListChanged: () => void;
}

const DEFAULT_RECONNECT: ReconnectPolicy = { initialMs: 500, maxMs: 30_000 };
/**
 * Bound on the ping that checks the server after a transport error. A dead local server refuses
 * at once; this is for one that no longer answers at all, and is still well under a tool timeout.
 */
const LIVENESS_TIMEOUT_MS = 5000;

export class McpLink {
  readonly name: string;
  readonly config: McpServerConfig;
  #log: Logger;
  #opts: McpLinkOptions;
  #state: McpServerState = 'closed';
  #lastError: string | undefined;
  #client: Client | undefined;
  #pid: number | undefined;
  #kind: McpTransportKind | undefined;
  #closing = false;
  #everConnected = false;
  #attempt = 0;
  #retryTimer: NodeJS.Timeout | undefined;
  #debounceTimer: NodeJS.Timeout | undefined;
  #connecting: Promise<void> | undefined;
  #connectAbort: AbortController | undefined;
  /** The client whose liveness is being checked (one check at a time: errors come in bursts). */
  #checking: Client | undefined;
  #stateListeners = new Set<(c: McpStateChange) => void>();
  #updateListeners = new Set<(uri: string) => void>();
  #listChangedListeners = new Set<() => void>();

  constructor(opts: McpLinkOptions) {
    this.name = opts.name;
    this.config = opts.config;
    this.#opts = opts;
    this.#log = opts.log;
  }

  get state(): McpServerState {
    return this.#state;
  }
  get lastError(): string | undefined {
    return this.#lastError;
  }
  get transportKind(): McpTransportKind | undefined {
    return this.#kind;
  }
  /** Child process id of a stdio server while connected. */
  get pid(): number | undefined {
    return this.#pid;
  }
  /** The connected client, if any. */
  get client(): Client | undefined {
    return this.#client;
  }

  /** The connected client, or a retryable ProviderUnavailable error. */
  requireClient(): Client {
    const c = this.#client;
    if (!c)
      throw new VoiceError(ErrorCode.ProviderUnavailable, `MCP server "${this.name}" is not connected`, {
        retryable: true,
      });
    return c;
  }

  /** What the server said it supports (undefined until connected). */
  capabilities(): { resources: boolean; subscribe: boolean; resourcesListChanged: boolean } {
    const caps = this.#client?.getServerCapabilities();
    return {
      resources: caps?.resources !== undefined,
      subscribe: caps?.resources?.subscribe === true,
      resourcesListChanged: caps?.resources?.listChanged === true,
    };
  }

  onStateChange(fn: (c: McpStateChange) => void): () => void {
    this.#stateListeners.add(fn);
    return () => this.#stateListeners.delete(fn);
  }
  /** `notifications/resources/updated` (uri as the server sent it). */
  onResourceUpdated(fn: (uri: string) => void): () => void {
    this.#updateListeners.add(fn);
    return () => this.#updateListeners.delete(fn);
  }
  /** `notifications/resources/list_changed`, and every (re)connect (server-side session state is new). */
  onResourcesListChanged(fn: () => void): () => void {
    this.#listChangedListeners.add(fn);
    return () => this.#listChangedListeners.delete(fn);
  }

  /**
   * Starts connecting. Resolves after the first attempt, whatever its outcome: a failure is logged
   * and retried in the background with backoff. Never throws.
   */
  start(): Promise<void> {
    this.#closing = false;
    return this.#connectOnce();
  }

  #setState(state: McpServerState, error?: string): void {
    const previous = this.#state;
    if (error !== undefined) this.#lastError = error;
    if (previous === state) return;
    this.#state = state;
    const change: McpStateChange =
      error === undefined ? { server: this.name, state, previous } : { server: this.name, state, previous, error };
    if (state === 'failed') this.#log.warn({ state, previous, error }, 'mcp server state changed');
    else this.#log.info({ state, previous, transport: this.#kind }, 'mcp server state changed');
    for (const fn of this.#stateListeners) {
      try {
        fn(change);
      } catch (err) {
        this.#log.error({ err: errMessage(err) }, 'mcp state listener threw');
      }
    }
  }

  #connectOnce(): Promise<void> {
    if (this.#connecting) return this.#connecting;
    this.#connecting = this.#doConnect().finally(() => {
      this.#connecting = undefined;
    });
    return this.#connecting;
  }

  async #doConnect(): Promise<void> {
    this.#setState('connecting');
    const started = performance.now();
    let opened: Awaited<ReturnType<typeof openClient>> | undefined;
    const abort = new AbortController();
    this.#connectAbort = abort;
    try {
      opened = await openClient(this.name, this.config, {
        clientInfo: this.#opts.clientInfo,
        log: this.#log,
        connectTimeoutMs: this.#opts.connectTimeoutMs ?? 15_000,
        setup: (c) => this.#installHandlers(c),
        onTransportError: (c, err) => this.#onTransportError(c, err),
        signal: abort.signal,
      });
      if (this.#closing) {
        await this.#closeClient(opened.client, opened.pid);
        return;
      }
      this.#client = opened.client;
      this.#pid = opened.pid;
      this.#kind = opened.kind;
      const client = opened.client;
      client.onclose = () => this.#onClientClosed(client);
      client.onerror = (err) => this.#log.debug({ err: err.message }, 'mcp transport error');
      await this.#opts.afterConnect();
      if (this.#closing || this.#client !== client) return;
      if (this.#everConnected) this.#opts.stats.reconnects++;
      this.#everConnected = true;
      this.#attempt = 0;
      this.#log.info(
        { ms: Math.round(performance.now() - started), transport: opened.kind, pid: opened.pid },
        'mcp server connected',
      );
      this.#setState('ready');
      for (const fn of this.#listChangedListeners) fn();
    } catch (err) {
      const msg = errMessage(err);
      if (opened && this.#client === opened.client) {
        this.#client = undefined;
        await this.#closeClient(opened.client, opened.pid);
      }
      if (this.#closing) return;
      this.#setState('failed', msg);
      this.#scheduleReconnect();
    } finally {
      if (this.#connectAbort === abort) this.#connectAbort = undefined;
    }
  }

  #installHandlers(client: Client): void {
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      if (this.#client !== client) return;
      // Servers often send a burst (one per registered tool): refresh once, all pages.
      clearTimeout(this.#debounceTimer);
      this.#debounceTimer = setTimeout(() => {
        this.#debounceTimer = undefined;
        this.#opts.onToolsListChanged();
      }, this.#opts.listChangedDebounceMs ?? 300);
    });
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
      this.#log.debug({ uri: n.params.uri }, 'mcp resource updated');
      for (const fn of this.#updateListeners) fn(n.params.uri);
    });
    client.setNotificationHandler(ResourceListChangedNotificationSchema, () => {
      this.#log.debug('mcp resource list changed');
      for (const fn of this.#listChangedListeners) fn();
    });
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
      this.#log.debug({ level: n.params.level, data: n.params.data }, 'mcp server log message');
    });
  }

  #onClientClosed(client: Client): void {
    if (this.#client !== client) return;
    this.#client = undefined;
    this.#pid = undefined;
    if (this.#closing) return;
    this.#setState('failed', 'connection closed');
    this.#scheduleReconnect();
  }

  /**
   * A transport error may be harmless (a long-lived SSE stream cut by a proxy and resumed, one
   * unparsable event) or mean the server is gone. Over HTTP the SDK reports a server that died
   * mid-request only here, and the request then waits for its timeout (30 s by default); over
   * stdio the child's exit closes the client at once. So the server is asked a ping: when that
   * fails too (connection refused, no answer, unknown session), the link is dropped, which fails
   * every request in flight at once (the SDK rejects them as "Connection closed") and reconnects.
   * Judged by the ping's outcome, not by the error's text, which the SDK does not promise.
   */
  #onTransportError(client: Client, err: Error): void {
    if (this.#client !== client || this.#closing) return;
    this.#log.debug({ err: err.message }, 'mcp transport error');
    if (this.#checking === client) return;
    this.#checking = client;
    client
      .ping({ timeout: LIVENESS_TIMEOUT_MS })
      .then(
        () => this.#log.info({ err: err.message }, 'mcp transport error, server still answers'),
        (pingErr: unknown) => {
          const kind = classifyFailure(pingErr);
          // A JSON-RPC error (ping not implemented) or an odd reply is still an answer.
          if (kind === 'rpc' || kind === 'malformed') return;
          if (this.#client !== client || this.#closing) return;
          this.#log.warn({ err: err.message, ping: errMessage(pingErr) }, 'mcp server lost after a transport error');
          this.dropAndReconnect(`server stopped answering after a transport error: ${err.message}`);
        },
      )
      .finally(() => {
        if (this.#checking === client) this.#checking = undefined;
      });
  }

  /** Drops a broken link (e.g. an HTTP server that went away) and reconnects in the background. */
  dropAndReconnect(reason: string): void {
    const client = this.#client;
    const pid = this.#pid;
    if (!client || this.#closing) return;
    this.#client = undefined;
    this.#pid = undefined;
    this.#setState('failed', reason);
    void this.#closeClient(client, pid);
    this.#scheduleReconnect();
  }

  #scheduleReconnect(): void {
    if (this.#closing || this.#retryTimer) return;
    const policy = this.#opts.reconnect ?? DEFAULT_RECONNECT;
    const base = Math.min(policy.maxMs, policy.initialMs * 2 ** this.#attempt);
    // ±20 % jitter so several servers that died together do not retry in lockstep.
    const delay = Math.round(base * (0.8 + Math.random() * 0.4));
    this.#attempt++;
    this.#log.info({ delayMs: delay, attempt: this.#attempt }, 'mcp server reconnect scheduled');
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      void this.#connectOnce();
    }, delay);
  }

  async #closeClient(client: Client, pid: number | undefined): Promise<void> {
    client.onclose = undefined;
    // SDK stdio close() waits up to 2 s + 2 s for the child; bound it and make sure the child is gone.
    await Promise.race([client.close().catch(() => undefined), new Promise((r) => setTimeout(r, 4500).unref())]);
    if (pid !== undefined) {
      try {
        process.kill(pid, 0);
        process.kill(pid, 'SIGKILL');
        this.#log.warn({ pid }, 'mcp server child killed after close timeout');
      } catch {
        // already gone
      }
    }
  }

  /** Closes the client and makes sure a stdio child is gone; no reconnect afterwards. Bounded (~5 s). */
  async close(): Promise<void> {
    this.#closing = true;
    this.#connectAbort?.abort(new VoiceError(ErrorCode.Aborted, 'mcp manager closing'));
    clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    clearTimeout(this.#debounceTimer);
    this.#debounceTimer = undefined;
    const client = this.#client;
    const pid = this.#pid;
    this.#client = undefined;
    this.#pid = undefined;
    if (client) await this.#closeClient(client, pid);
    // A connect in flight finishes by closing what it opened (it checks #closing).
    if (this.#connecting) await Promise.race([this.#connecting, new Promise((r) => setTimeout(r, 5000).unref())]);
    this.#setState('closed');
  }
}
