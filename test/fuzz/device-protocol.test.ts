/**
 * The property-based fuzz suite of the device protocol in CI: a fixed seed and a modest number of
 * runs against the real server (see fuzz-run.ts for what is checked). `npm run fuzz -- --runs N`
 * runs the same properties at length.
 */
import { after, before, describe, test } from 'node:test';
import { startFuzzServer, type FuzzServer } from './fuzz-server.ts';
import { describeStats, runFuzz } from './fuzz-run.ts';
import { closeAll } from '../helpers/close-all.ts';

/** Fixed so CI is reproducible; the long run takes any seed. */
const SEED = 20_260_513;
const CONNECTION_RUNS = 600;
const MCP_RUNS = 40;

describe('device protocol fuzz (fast-check)', () => {
  let fz: FuzzServer | undefined;
  before(async () => {
    fz = await startFuzzServer();
  });
  after(() => closeAll(fz));

  test(`seed ${SEED}: ${CONNECTION_RUNS} fuzzed connections and ${MCP_RUNS} device MCP exchanges; no crash, defined endings, the bystander keeps talking`, async () => {
    const server = fz as FuzzServer;
    const startedAt = Date.now();
    console.log(`fuzz: seed ${SEED}, runs ${CONNECTION_RUNS} connections + ${MCP_RUNS} MCP exchanges`);
    try {
      const r = await runFuzz(server, { seed: SEED, connectionRuns: CONNECTION_RUNS, mcpRuns: MCP_RUNS });
      console.log(`fuzz: honest device ${r.honestTurns} typed turns, then heard "${r.recognised}"`);
    } finally {
      console.log(`fuzz: ${describeStats(server, startedAt)}`);
    }
  });
});
