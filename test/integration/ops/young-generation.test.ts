/**
 * V8's young generation stays at the size it had on Node 20 (two 16 MB semi-spaces) in every
 * start of the server: Node 24's V8 sizes it from the heap limit, 64 MB semi-spaces on a machine
 * with a few GB, and a burst of hellos grew it to 128 MB of RSS that an idle fleet then kept
 * (BENCHMARKS.md, "20,000 idle devices"). Read from the server's own /metrics.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { freePort, spawnServer, type SpawnedServer } from './helpers/spawned-server.ts';
import { PROFILES } from '../../bench/sim/provider-profiles.ts';
import { startLocalServer, type SimServer } from '../../bench/sim/server.ts';
import { parsePrometheus } from '../../bench/sim/stats.ts';

const MB = 1024 * 1024;
/** Node 20's young generation on a 64-bit machine with a few GB: two 16 MB semi-spaces. */
const YOUNG_MAX_BYTES = 32 * MB;

async function youngGenerationBytes(httpUrl: string): Promise<number> {
  const m = parsePrometheus(await (await fetch(`${httpUrl}/metrics`)).text());
  const v = m.get('nodejs_heap_space_size_total_bytes{space="new"}');
  assert.ok(v !== undefined, '/metrics has the young generation (new space)');
  return v;
}

describe('V8 young generation', () => {
  const dir = mkdtempSync(join(tmpdir(), 'young-gen-'));
  let server: SpawnedServer | undefined;
  let sim: SimServer | undefined;
  after(async () => {
    await server?.kill();
    await sim?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('`npm start`: at most two 16 MB semi-spaces once the server is ready', { timeout: 120_000 }, async () => {
    const port = await freePort();
    const config = join(dir, 'config.yaml');
    writeFileSync(
      config,
      stringify({ server: { host: '127.0.0.1', port, dataDir: join(dir, 'data') }, logging: { level: 'warn' } }),
    );
    const env: NodeJS.ProcessEnv = { ...process.env, XIAOZHI_CONFIG: config };
    for (const k of ['HOST', 'PORT', 'DATABASE_URL', 'XIAOZHI_DATA_DIR']) delete env[k];
    server = await spawnServer({ command: 'npm', args: ['start'], env, port, readyTimeoutMs: 90_000 });
    const bytes = await youngGenerationBytes(server.httpUrl);
    assert.ok(bytes <= YOUNG_MAX_BYTES, `young generation ${bytes / MB} MB`);
  });

  test('the fleet simulator’s server: the same', { timeout: 120_000 }, async () => {
    sim = await startLocalServer({
      transcript: 'hello',
      answer: 'Hello.',
      providers: PROFILES.instant,
      configOverrides: {},
      env: {},
      nodeArgs: [],
      readyTimeoutMs: 90_000,
      log: () => {},
    });
    const bytes = await youngGenerationBytes(sim.httpUrl);
    assert.ok(bytes <= YOUNG_MAX_BYTES, `young generation ${bytes / MB} MB`);
  });
});
