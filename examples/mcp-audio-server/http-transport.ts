/**
 * @module Streamable HTTP, stateless: each POST to /mcp gets a fresh McpServer and transport
 * (they share the AudioServerContext). GET and DELETE answer 405, as stateless servers do.
 * When bound to loopback, Host and Origin must be loopback too (DNS-rebinding protection).
 */
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { AudioServerContext } from './server.ts';
import { createAudioServer } from './server.ts';

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/** Starts listening; resolves with the server and the URL of its MCP endpoint. */
export async function listenHttp(
  ctx: AudioServerContext,
  host: string,
  port: number,
): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    handle(ctx, host, req, res).catch((err: unknown) => {
      ctx.log('http request failed', { err: err instanceof Error ? err.message : String(err) });
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: 'internal error' }, id: null }));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return { server, url: `http://${shownHost}:${address.port}/mcp` };
}

async function handle(
  ctx: AudioServerContext,
  boundHost: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const path = (req.url ?? '/').split('?')[0];
  if (path !== '/mcp') {
    res.writeHead(404).end('not found');
    return;
  }
  if (LOOPBACK.has(boundHost) && !loopbackRequest(req)) {
    res.writeHead(403).end('host or origin not allowed');
    return;
  }
  if (req.method !== 'POST') {
    res
      .writeHead(405, { allow: 'POST' })
      .end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed.' }, id: null }));
    return;
  }
  const mcp = createAudioServer(ctx);
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on('close', () => {
    void transport.close();
    void mcp.close();
  });
  await mcp.connect(transport);
  await transport.handleRequest(req, res);
}

function loopbackRequest(req: IncomingMessage): boolean {
  const hostHeader = req.headers.host ?? '';
  const hostname = hostHeader.startsWith('[')
    ? hostHeader.slice(0, hostHeader.indexOf(']') + 1)
    : (hostHeader.split(':')[0] ?? '');
  if (!LOOPBACK.has(hostname)) return false;
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  try {
    return LOOPBACK.has(new URL(origin).hostname);
  } catch {
    return false;
  }
}
