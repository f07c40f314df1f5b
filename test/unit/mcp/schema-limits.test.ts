/** The input-schema bounds are checked without recursion: 30,000 levels do not overflow the stack. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { schemaOverLimits } from '../../../mcp/schema-limits.ts';

test('a schema 30,000 levels deep is refused by depth, without a stack overflow', () => {
  const deep: unknown = JSON.parse('{"type":"object","properties":{"x":'.repeat(30_000) + '{}' + '}}'.repeat(30_000));
  assert.deepEqual(schemaOverLimits(deep, { maxDepth: 32, maxNodes: 1_000_000 }), {
    kind: 'tooDeep',
    why: 'nested deeper than 32',
  });
});

test('node count, length as JSON, and schemas within bounds', () => {
  const wide = {
    type: 'object',
    properties: Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [`p${i}`, { type: 'string' }])),
  };
  assert.deepEqual(schemaOverLimits(wide, { maxDepth: 32, maxNodes: 2000 }), {
    kind: 'tooLarge',
    why: 'more than 2000 values',
  });
  const long = { type: 'object', description: 'x'.repeat(500) };
  assert.deepEqual(schemaOverLimits(long, { maxDepth: 32, maxNodes: 2000, maxChars: 400 }), {
    kind: 'tooLarge',
    why: 'longer than 400 characters',
  });
  assert.equal(schemaOverLimits(long, { maxDepth: 32, maxNodes: 2000 }), undefined, 'no length bound unless given');
  assert.equal(
    schemaOverLimits({ type: 'object', properties: { a: { type: 'string' } } }, { maxDepth: 32, maxNodes: 2000 }),
    undefined,
  );
  assert.equal(schemaOverLimits(undefined, { maxDepth: 32, maxNodes: 2000, maxChars: 10 }), undefined);
});
