/**
 * The admin API under fast-check in CI: a fixed seed and a few hundred hostile requests (see
 * admin-property.ts for the bounds checked: no undeclared 5xx, wrong tokens never in and always
 * budgeted, the server up and bounded). `npm run fuzz` runs the same property at length.
 */
import { test } from 'node:test';
import { runAdminFuzz } from './admin-run.ts';

/** Fixed so CI is reproducible; the long run takes any seed. */
const SEED = 20_261_127;
const RUNS = 400;

test(`seed ${SEED}: ${RUNS} hostile admin API requests; declared answers only, every wrong token budgeted, the server up`, {
  timeout: 300_000,
}, async () => {
  console.log(`admin fuzz: ${await runAdminFuzz({ seed: SEED, runs: RUNS })}`);
});
