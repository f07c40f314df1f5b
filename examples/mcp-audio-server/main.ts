/**
 * Entry point of the example MCP audio server.
 *   npx tsx examples/mcp-audio-server/main.ts --stdio --music-dir ./music
 *   npx tsx examples/mcp-audio-server/main.ts --http --port 8808 --urls "Song | https://cdn.example.com/a.mp3"
 * Logs go to stderr as JSON lines; stdout belongs to the stdio transport.
 */
import { readFileSync } from 'node:fs';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { ConfigError, USAGE, parseConfig } from './config.ts';
import { listenHttp } from './http-transport.ts';
import { createAudioServer, createContext } from './server.ts';

function log(msg: string, fields: Record<string, unknown> = {}): void {
  process.stderr.write(
    `${JSON.stringify({ time: new Date().toISOString(), name: 'mcp-audio-server', msg, ...fields })}\n`,
  );
}

async function main(): Promise<void> {
  let config;
  try {
    config = parseConfig(process.argv.slice(2), process.env, (p) => readFileSync(p, 'utf8'));
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message === 'help' ? USAGE : `${err.message}\n${USAGE}`);
      process.exit(err.message === 'help' ? 0 : 2);
    }
    throw err;
  }
  const ctx = await createContext(config, log);
  log('catalog loaded', { tracks: ctx.tracks.length, allowHosts: ctx.reader.policy.allowHosts });

  if (config.transport === 'stdio') {
    const mcp = createAudioServer(ctx);
    const transport = new StdioServerTransport();
    // The client closing stdin ends the server: no orphan process.
    process.stdin.on('end', () => {
      void mcp.close().finally(() => process.exit(0));
    });
    await mcp.connect(transport);
    log('serving on stdio');
    return;
  }
  const { server, url } = await listenHttp(ctx, config.host, config.port);
  log('listening', { url });
  const stop = (): void => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((err: unknown) => {
  log('fatal', { err: err instanceof Error ? err.message : String(err) });
  process.exit(1);
});
