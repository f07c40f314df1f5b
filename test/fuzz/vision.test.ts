/**
 * The camera endpoint under fast-check in CI: a fixed seed and a few hundred hostile uploads (see
 * vision-run.ts for what is drawn and checked). `npm run fuzz -- --vision-runs N` runs it at length.
 */
import { test } from 'node:test';
import { runVisionFuzz } from './vision-run.ts';

const SEED = 20_261_129;
const RUNS = 250;

test(`seed ${SEED}: ${RUNS} hostile camera uploads; declared answers with the firmware's JSON, no crash, still serving`, async () => {
  console.log(`vision fuzz: ${await runVisionFuzz({ seed: SEED, runs: RUNS })}`);
});
