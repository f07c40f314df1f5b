// An HTTP MCP server that dies and comes back: calls in between are error results, the manager
// reconnects with backoff on its own, and calls work again afterwards.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createMcpManager } from '../../../mcp/manager.ts';
import { createFixtureServer } from '../../fixtures/mcp-fixture-server.ts';
import { recordingLogger, servers } from './mcp-test-helpers.ts';
import { waitFor } from '../../helpers/wait.ts';

/** Stateless streamable HTTP fixture (a new McpServer per POST) on the given port. */
async function listen(port: number): Promise<Server> {
  const http = createServer((req, res) => {
    if (req.method !== 'POST') {
      res.writeHead(405).end();
      return;
    }
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    const mcp = createFixtureServer();
    res.on('close', () => {
      void transport.close();
      void mcp.close();
    });
    void mcp.connect(transport).then(() => transport.handleRequest(req, res));
  });
  await new Promise<void>((resolve) => http.listen(port, '127.0.0.1', resolve));
  return http;
}

async function stop(http: Server): Promise<void> {
  http.closeAllConnections();
  await new Promise<void>((resolve) => http.close(() => resolve()));
}

test('streamable HTTP server restart: error result, reconnect, calls work again', async (t) => {
  let http = await listen(0);
  const port = (http.address() as AddressInfo).port;
  const log = recordingLogger();
  const m = createMcpManager({
    log,
    reconnect: { initialMs: 100, maxMs: 300 },
    servers: servers({ web: { url: `http://127.0.0.1:${port}/mcp`, timeoutMs: 3000 } }),
  });
  t.after(async () => {
    await m.close();
    await stop(http);
  });
  await m.start();
  assert.equal(m.status()[0]?.state, 'ready');
  assert.equal(m.status()[0]?.transport, 'streamable-http');
  const ts = m.sessionView();
  const ok = await ts.callTool('web__echo', { text: 'one' }, { signal: new AbortController().signal });
  assert.equal(ok.isError, false);

  await stop(http);
  const down = await ts.callTool('web__echo', { text: 'two' }, { signal: new AbortController().signal });
  assert.equal(down.isError, true);
  assert.notEqual(m.status()[0]?.state, 'ready');

  http = await listen(port);
  await waitFor(() => m.status()[0]?.state === 'ready', { what: 'the server to reconnect', timeoutMs: 8000 });
  const again = await ts.callTool('web__echo', { text: 'three' }, { signal: new AbortController().signal });
  assert.equal(again.isError, false);
  assert.ok((m.stats().web?.reconnects ?? 0) >= 1);
});
