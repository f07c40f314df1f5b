/**
 * Every start of the server runs it the same way: `npm start` (the sources), the container image
 * (the compiled output) and the fleet simulator (which measures what `npm start` runs). The node
 * flags are `npm start`'s; the image repeats them and the simulator reads them from package.json.
 * Why these flags: BENCHMARKS.md ("20,000 idle devices") and docs/benchmark-history.md.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { imageCmd, npmStartArgs, serverCommandArgs } from '../../bench/sim/start-command.ts';
import { imageServerArgs } from '../../container/server-command.ts';

test('npm start runs the sources on Node’s own type stripping (no tsx loader) with the young generation capped', () => {
  // A loader that rewrites every function (tsx keeps names with a helper that redefines each
  // function's `name`) costs 256 bytes per closure; Node 24 lets the young generation grow to 128 MB.
  assert.deepEqual(npmStartArgs(), ['--max-semi-space-size=16', 'server/main.ts']);
});

test('the image runs the compiled server with npm start’s node flags, and the container checks run the image’s CMD', () => {
  const flags = npmStartArgs().slice(0, -1);
  assert.deepEqual(imageCmd(), ['node', ...flags, 'dist/server/main.js']);
  assert.deepEqual(imageServerArgs(['run'], { PORT: '1' }), [
    'run',
    '/usr/bin/tini',
    '--',
    'env',
    'PORT=1',
    'node',
    ...flags,
    'dist/server/main.js',
  ]);
});

test('the fleet simulator starts the server as npm start does; its extra node arguments come after, so they win', () => {
  assert.deepEqual(serverCommandArgs('/tmp/x.yaml', []), [...npmStartArgs(), '--config', '/tmp/x.yaml']);
  assert.deepEqual(serverCommandArgs('/tmp/x.yaml', ['--max-semi-space-size=1', '--cpu-prof']), [
    '--max-semi-space-size=16',
    '--max-semi-space-size=1',
    '--cpu-prof',
    'server/main.ts',
    '--config',
    '/tmp/x.yaml',
  ]);
});
