// Test entry point (`npm test`): runs every *.test.ts under test/ with node:test through tsx.
// Node 20 has no glob support in `--test`, so the files are listed here. Pass folder names
// (e.g. `npm test -- e2e/music`; `npm run test:unit` passes `test/unit/`) to run a subset.
// TEST_CONCURRENCY overrides the file concurrency.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

function findTests(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (name === 'node_modules' || name === 'output' || name === 'fixtures') continue;
    if (statSync(p).isDirectory()) out.push(...findTests(p));
    else if (name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

const filters = process.argv.slice(2);
const files = findTests('test')
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();
if (files.length === 0) {
  console.error('no test files matched', filters);
  process.exit(1);
}
// Three files at once: most of the suite waits on real-time playback, not on the CPU (on 2 cores
// 965 tests took 10.0 min two at a time, 7.4 min three at a time).
const concurrency = process.env.TEST_CONCURRENCY ?? '3';
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, '--test-reporter=spec', ...files],
  { stdio: 'inherit' },
);
process.exit(result.status ?? 1);
