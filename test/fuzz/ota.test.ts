/**
 * The OTA endpoint and the identity fields under fast-check in CI: a fixed seed and a few hundred
 * hostile requests per auth mode (see ota-property.ts for what is checked). `npm run fuzz` runs
 * the same property at length.
 */
import { test } from 'node:test';
import { runOtaFuzz } from './ota-run.ts';

/** Fixed so CI is reproducible; the long run takes any seed. */
const SEED = 20_261_127;
const RUNS_PER_MODE = 300;

test(`seed ${SEED}: ${RUNS_PER_MODE} hostile OTA requests per auth mode; 200 or 4xx, no crash, a bounded data directory, a restart`, async () => {
  const lines = await runOtaFuzz({ seed: SEED, runsPerMode: RUNS_PER_MODE });
  for (const l of lines) console.log(`ota fuzz: ${l}`);
});
