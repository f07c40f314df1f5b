/** The input-schema bounds are checked without recursion: 30,000 levels do not overflow the stack. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { schemaOverLimits } from '../../../server/mcp-endpoint/limits.ts';

test('a schema 30,000 levels deep is refused by depth, without a stack overflow', () => {
  const deep: unknown = JSON.parse('{"type":"object","properties":{"x":'.repeat(30_000) + '{}' + '}}'.repeat(30_000));
  assert.equal(schemaOverLimits(deep, 32, 1_000_000), 'nested deeper than 32');
});

test('node count, and schemas within bounds', () => {
  const wide = { type: 'object', properties: Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [`p${i}`, { type: 'string' }])) };
  assert.equal(schemaOverLimits(wide, 32, 2000), 'more than 2000 values');
  assert.equal(schemaOverLimits({ type: 'object', properties: { a: { type: 'string' } } }, 32, 2000), undefined);
  assert.equal(schemaOverLimits(undefined, 32, 2000), undefined);
});
