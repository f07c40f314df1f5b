/** Shared helpers for the MCP integration tests: server commands, a recording logger, process checks. */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../../../core/logger.ts';
import type { McpManager } from '../../../mcp/manager.ts';
import type { McpServerConfig } from '../../../mcp/server-config.ts';
import type { ResourceSource } from '../../../mcp/contract/tool-source.ts';
import { parseMcpServersConfig } from '../../../mcp/server-config.ts';

export const REPO_ROOT = fileURLToPath(new URL('../../..', import.meta.url));
export const FIXTURE = fileURLToPath(new URL('../../fixtures/mcp-fixture-server.ts', import.meta.url));
export const EVERYTHING = fileURLToPath(
  new URL('../../../node_modules/@modelcontextprotocol/server-everything/dist/index.js', import.meta.url),
);

/** Parses a config block the way server/config.ts will (defaults applied). */
export function servers(input: Record<string, unknown>): Record<string, McpServerConfig> {
  return parseMcpServersConfig(input);
}

/** A stdio entry for the fixture server (run through tsx). */
export function fixtureEntry(extraArgs: string[] = [], more: Record<string, unknown> = {}): Record<string, unknown> {
  return { command: process.execPath, args: ['--import', 'tsx', FIXTURE, ...extraArgs], cwd: REPO_ROOT, ...more };
}

export interface LogRecord {
  level: string;
  msg: string;
  obj: Record<string, unknown>;
}

/** A Logger that keeps every record (and optionally prints with MCP_TEST_LOG=1). */
export function recordingLogger(): Logger & { records: LogRecord[] } {
  const records: LogRecord[] = [];
  const mk =
    (level: string) =>
    (a: object | string, b?: string): void => {
      const rec =
        typeof a === 'string' ? { level, msg: a, obj: {} } : { level, msg: b ?? '', obj: a as Record<string, unknown> };
      records.push(rec);
    };
  const log: Logger & { records: LogRecord[] } = {
    records,
    trace: mk('trace'),
    debug: mk('debug'),
    info: mk('info'),
    warn: mk('warn'),
    error: mk('error'),
    fatal: mk('fatal'),
    child: () => log,
  };
  return log;
}

export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      s.close(() => resolve(port));
    });
  });
}

/**
 * Starts server-everything in an HTTP mode on a free port (it has no host option and takes the
 * port from PORT; we pick a free one and retry if it got taken meanwhile).
 */
export async function startEverythingHttp(
  mode: 'sse' | 'streamableHttp',
): Promise<{ url: string; child: ChildProcess; close: () => Promise<void> }> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const child = spawn(process.execPath, [EVERYTHING, mode], {
      env: { PATH: process.env.PATH ?? '', PORT: String(port) },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const ok = await new Promise<boolean>((resolve) => {
      let buf = '';
      const timer = setTimeout(() => resolve(false), 10_000);
      child.stderr?.on('data', (d: Buffer) => {
        buf += d.toString();
        if (/listening on port|running on port/i.test(buf)) {
          clearTimeout(timer);
          resolve(true);
        } else if (/in use|EADDRINUSE/i.test(buf)) {
          clearTimeout(timer);
          resolve(false);
        }
      });
      child.once('exit', () => {
        clearTimeout(timer);
        resolve(false);
      });
    });
    const close = async (): Promise<void> => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 2000);
      await exited;
      clearTimeout(t);
    };
    if (ok) return { url: `http://127.0.0.1:${port}/${mode === 'sse' ? 'sse' : 'mcp'}`, child, close };
    await close();
  }
  throw new Error(`server-everything ${mode} did not start`);
}

/**
 * A server's ResourceSource as production code gets it: attached to that server's tool results
 * (the dispatcher reads resource links through it). `tool` is any cheap tool of that server.
 */
export async function resourcesOf(
  m: McpManager,
  tool: string,
  args: Record<string, unknown> = {},
): Promise<ResourceSource> {
  const r = await m.sessionView().callTool(tool, args, { signal: new AbortController().signal });
  if (!r.resources) throw new Error(`${tool} returned no ResourceSource (isError ${r.isError})`);
  return r.resources;
}

/** A context string from McpManager.contextFor, taken apart again. */
export function parseContextBlock(s: string): { uri: string; server: string; text: string; truncated: boolean } {
  const m = /^Context from resource (\S+) \(MCP server "([^"]+)"\):\n([\s\S]*?)(\n\[…truncated\])?$/.exec(s);
  if (!m) throw new Error(`not a context block: ${s.slice(0, 80)}`);
  return { uri: m[1] as string, server: m[2] as string, text: m[3] as string, truncated: m[4] !== undefined };
}
