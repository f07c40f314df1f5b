/**
 * The MCP endpoint under fast-check in CI: a fixed seed and a hundred hostile bridges (see
 * mcp-endpoint-run.ts for what is checked). `npm run fuzz` runs the same property at length.
 */
import { test } from 'node:test';
import { runMcpEndpointFuzz } from './mcp-endpoint-run.ts';

const SEED = 20_261_127;
const RUNS = 100;

test(`seed ${SEED}: ${RUNS} hostile MCP bridges; known close codes, calls answer, the endpoint keeps serving`, {
  timeout: 300_000,
}, async () => {
  for (const l of await runMcpEndpointFuzz({ seed: SEED, runs: RUNS })) console.log(`mcp endpoint fuzz: ${l}`);
});
