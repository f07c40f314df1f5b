/**
 * @module Opens one MCP client connection from a config entry: stdio (child process with a minimal
 * env plus the configured one, stderr to the log), streamable HTTP, legacy SSE, or auto
 * (streamable HTTP first, SSE when the server answers 400/404/405, as the spec's
 * backwards-compatibility rule says).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { Logger } from '../core/logger.ts';
import { requestScopedFetch } from './request-scoped-fetch.ts';
import {
  isStdioConfig,
  type McpHttpServerConfig,
  type McpServerConfig,
  type McpStdioServerConfig,
} from './server-config.ts';

export type McpTransportKind = 'stdio' | 'streamable-http' | 'sse';

export interface ClientInfo {
  name: string;
  version: string;
}

export interface ConnectedClient {
  client: Client;
  kind: McpTransportKind;
  /** Child process id for stdio servers (used to make sure it is gone at shutdown). */
  pid?: number;
}

export interface OpenClientOptions {
  clientInfo: ClientInfo;
  log: Logger;
  /** Bound on the initialize handshake, in ms. */
  connectTimeoutMs: number;
  /** Called on every fresh Client before connect, to install notification handlers. */
  setup: (client: Client) => void;
  /** Aborts the handshake (shutdown while connecting); the SDK then closes the transport. */
  signal?: AbortSignal;
  /**
   * Errors the transport itself reports (a broken response stream, a failed reconnect of the
   * SSE stream, a child process error), as opposed to the protocol's own complaints: over HTTP
   * the SDK reports a server that died mid-request only this way, leaving the request pending.
   */
  onTransportError?: (client: Client, err: Error) => void;
}

/** Longest stderr line we forward to the log; servers sometimes dump whole payloads there. */
const MAX_STDERR_LINE = 500;

function connectOptions(opts: OpenClientOptions): { timeout: number; signal?: AbortSignal } {
  return opts.signal ? { timeout: opts.connectTimeoutMs, signal: opts.signal } : { timeout: opts.connectTimeoutMs };
}

function newClient(opts: OpenClientOptions, transport: Transport): Client {
  // Our own list_changed handling pages through every cursor; the SDK's autoRefresh reads page 1 only.
  const client = new Client(opts.clientInfo, { capabilities: {} });
  opts.setup(client);
  // Set before connect: the client keeps a handler it finds there and calls it before its own.
  const onTransportError = opts.onTransportError;
  if (onTransportError) transport.onerror = (err) => onTransportError(client, err);
  return client;
}

/**
 * Connects, and closes the transport when that fails. The SDK closes it only when the initialize
 * request fails, not when the transport's start does: a legacy SSE transport whose server is down
 * keeps its EventSource, which retries on its own every few seconds for ever (each failed
 * reconnect attempt added one) and, once the server is back, holds a stream nobody reads.
 */
async function connectOrClose(client: Client, transport: Transport, opts: OpenClientOptions): Promise<void> {
  try {
    await client.connect(transport, connectOptions(opts));
  } catch (err) {
    await transport.close().catch(() => undefined);
    throw err;
  }
}

async function openStdio(name: string, cfg: McpStdioServerConfig, opts: OpenClientOptions): Promise<ConnectedClient> {
  const transport = new StdioClientTransport({
    command: cfg.command,
    args: cfg.args,
    // A minimal env plus the configured one: never hand our own secrets to a third-party process.
    env: { ...getDefaultEnvironment(), ...(cfg.env ?? {}) },
    ...(cfg.cwd === undefined ? {} : { cwd: cfg.cwd }),
    stderr: 'pipe',
  });
  const stderr = transport.stderr;
  if (stderr) {
    let buf = '';
    stderr.on('data', (chunk: Buffer) => {
      buf += chunk.toString('utf8');
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl).trimEnd();
        buf = buf.slice(nl + 1);
        if (line) opts.log.debug({ server: name, line: line.slice(0, MAX_STDERR_LINE) }, 'mcp server stderr');
      }
      if (buf.length > 64 * 1024) buf = buf.slice(-MAX_STDERR_LINE);
    });
  }
  const client = newClient(opts, transport);
  await connectOrClose(client, transport, opts);
  const pid = transport.pid;
  return pid === null ? { client, kind: 'stdio' } : { client, kind: 'stdio', pid };
}

function httpInit(cfg: McpHttpServerConfig): RequestInit | undefined {
  return cfg.headers ? { headers: cfg.headers } : undefined;
}

async function openWith(
  transport: Transport,
  kind: McpTransportKind,
  opts: OpenClientOptions,
): Promise<ConnectedClient> {
  const client = newClient(opts, transport);
  await connectOrClose(client, transport, opts);
  return { client, kind };
}

/** True for the statuses after which the spec says to retry with the legacy HTTP+SSE transport. */
export function isSseFallbackError(err: unknown): boolean {
  return err instanceof StreamableHTTPError && (err.code === 400 || err.code === 404 || err.code === 405);
}

async function openHttp(name: string, cfg: McpHttpServerConfig, opts: OpenClientOptions): Promise<ConnectedClient> {
  const url = new URL(cfg.url);
  const init = httpInit(cfg);
  const sse = (): Promise<ConnectedClient> =>
    openWith(new SSEClientTransport(url, init ? { requestInit: init } : undefined), 'sse', opts);
  if (cfg.transport === 'sse') return sse();
  // Each request's response stream is closed when the request is given up (request-scoped-fetch.ts).
  const streamable = new StreamableHTTPClientTransport(url, {
    ...(init ? { requestInit: init } : {}),
    fetch: requestScopedFetch(),
  });
  try {
    return await openWith(streamable, 'streamable-http', opts);
  } catch (err) {
    if (cfg.transport === 'auto' && isSseFallbackError(err)) {
      opts.log.info(
        { server: name, status: (err as StreamableHTTPError).code },
        'mcp streamable http refused, falling back to sse',
      );
      return sse(); // a new Client: connect() already closed the failed one
    }
    throw err;
  }
}

/** Connects a new Client for one configured server; throws when the server cannot be reached. */
export function openClient(name: string, cfg: McpServerConfig, opts: OpenClientOptions): Promise<ConnectedClient> {
  return isStdioConfig(cfg) ? openStdio(name, cfg, opts) : openHttp(name, cfg as McpHttpServerConfig, opts);
}
