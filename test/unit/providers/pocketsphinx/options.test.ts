import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PocketsphinxAsrSchema } from '../../../../providers/pocketsphinx/options.ts';
import { AsrSchema } from '../../../../providers/registry/registry.ts';

test('pocketsphinx options: the streaming engine by default when built, its bounds defaulted', () => {
  assert.deepEqual(PocketsphinxAsrSchema.parse({ provider: 'pocketsphinx' }), {
    provider: 'pocketsphinx',
    engine: 'auto',
    maxStreams: 8,
    finalTimeoutMs: 3000,
    command: 'pocketsphinx_continuous',
  });
  assert.equal(AsrSchema.parse({ provider: 'pocketsphinx', engine: 'continuous' }).provider, 'pocketsphinx');
});

test('pocketsphinx options: a wrong key, an unknown engine or an unbounded maxStreams is refused', () => {
  for (const bad of [
    { provider: 'pocketsphinx', finalTimeout: 3000 },
    { provider: 'pocketsphinx', engine: 'batch' },
    { provider: 'pocketsphinx', maxStreams: 0 },
    { provider: 'pocketsphinx', maxStreams: 257 },
    { provider: 'pocketsphinx', finalTimeoutMs: 0 },
  ])
    assert.equal(AsrSchema.safeParse(bad).success, false, JSON.stringify(bad));
});
