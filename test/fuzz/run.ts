/**
 * The long fuzz run: `npm run fuzz -- --runs 100000 [--seed N] [--mcp-share 0.01] [--max-minutes M]`.
 * The same properties as the CI test (fuzz-run.ts), many more cases; prints progress every 10 s
 * and a final report (inputs sent, crashes, close codes, elapsed, RSS, heap after GC). Exit code 1
 * on any failure, with fast-check's seed and path to replay it.
 */
import { parseArgs } from 'node:util';
import { startFuzzServer } from './fuzz-server.ts';
import { describeStats, runFuzz } from './fuzz-run.ts';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '10000' },
    seed: { type: 'string' },
    'mcp-share': { type: 'string', default: '0.01' },
    'max-minutes': { type: 'string' },
  },
});
const runs = Number(values.runs);
const seed = values.seed !== undefined ? Number(values.seed) : Date.now() % 2 ** 31;
const mcpRuns = Math.round(runs * Number(values['mcp-share']));
const timeLimitMs = values['max-minutes'] !== undefined ? Number(values['max-minutes']) * 60_000 : undefined;
if (!Number.isInteger(runs) || runs < 1 || !Number.isInteger(seed)) throw new Error('--runs and --seed take integers');

/** Heap in use after a full collection (run with --expose-gc, as `npm run fuzz` does). */
function heapAfterGc(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().heapUsed;
}

const mb = (n: number): string => `${(n / 2 ** 20).toFixed(0)} MB`;
console.log(`fuzz: seed ${seed}, runs ${runs - mcpRuns} connections + ${mcpRuns} MCP exchanges${timeLimitMs ? `, at most ${values['max-minutes']} min` : ''}`);
const fz = await startFuzzServer();
const startedAt = Date.now();
const heapBefore = heapAfterGc();
let failed = false;
try {
  const r = await runFuzz(fz, { seed, connectionRuns: runs - mcpRuns, mcpRuns, progress: (l) => console.log(`  ${l}`), progressMs: 10_000, ...(timeLimitMs ? { timeLimitMs } : {}) });
  console.log(`fuzz: PASSED. Honest device: ${r.honestTurns} typed turns during the run, then heard "${r.recognised}"`);
} catch (err) {
  failed = true;
  console.error(`fuzz: FAILED (replay with --seed ${seed})\n${err instanceof Error ? err.message : String(err)}`);
  if (err instanceof Error && err.cause) console.error(String(err.cause));
} finally {
  console.log(`fuzz: ${describeStats(fz, startedAt)}`);
  console.log(`fuzz: heap after GC ${mb(heapBefore)} before, ${mb(heapAfterGc())} after`);
  await fz.close();
}
process.exit(failed ? 1 : 0);
