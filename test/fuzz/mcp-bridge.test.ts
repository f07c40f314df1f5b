/**
 * The MCP endpoint's bridges under fast-check in CI: a fixed seed and sixty hostile bridges (see
 * mcp-bridge-run.ts for what is checked). `npm run fuzz` runs the same property at length.
 */
import { test } from 'node:test';
import { runMcpBridgeFuzz } from './mcp-bridge-run.ts';

const SEED = 20_260_40;
const RUNS = 60;

test(`seed ${SEED}: ${RUNS} hostile bridges and bad tokens; bounds hold, the other bridges keep serving, memory stays bounded`, {
  timeout: 300_000,
}, async () => {
  for (const l of await runMcpBridgeFuzz({ seed: SEED, runs: RUNS })) console.log(`mcp bridge fuzz: ${l}`);
});
