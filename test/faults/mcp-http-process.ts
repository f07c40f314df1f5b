/**
 * The fixture MCP server as its own HTTP server process, streamable HTTP or legacy SSE (so a test
 * can SIGKILL it and start it again on the same port). Start-up failures reject within `startMs`,
 * never hang.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const FIXTURE = fileURLToPath(new URL('../fixtures/mcp-fixture-server.ts', import.meta.url));
const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface McpHttpProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly port: number;
  readonly url: string;
  /** SIGKILL, resolved once it has exited. */
  kill(): Promise<void>;
}

export interface McpHttpProcessOptions {
  /** Port to listen on (0: any free one). */
  port?: number;
  /** `streamable-http` (POST /mcp, stateless) or `sse` (GET /sse + POST /messages). Default streamable HTTP. */
  transport?: 'streamable-http' | 'sse';
  startMs?: number;
}

export async function startMcpHttpProcess(opts: McpHttpProcessOptions = {}): Promise<McpHttpProcess> {
  const startMs = opts.startMs ?? 15_000;
  const sse = opts.transport === 'sse';
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', FIXTURE, sse ? '--sse' : '--http', '--port', String(opts.port ?? 0)],
    {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const kill = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  };
  try {
    const bound = await new Promise<number>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`MCP HTTP fixture did not start within ${startMs} ms`)), startMs);
      child.stdout?.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /listening (\d+)/.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve(Number(m[1]));
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`MCP HTTP fixture exited (${String(code)}) before listening: ${out}`));
      });
    });
    // Nothing more is read from stdout; it must not hold a handle of its own once ready.
    child.stdout?.destroy();
    return {
      child,
      pid: child.pid as number,
      port: bound,
      url: `http://127.0.0.1:${bound}/${sse ? 'sse' : 'mcp'}`,
      kill,
    };
  } catch (err) {
    await kill();
    throw err;
  }
}
