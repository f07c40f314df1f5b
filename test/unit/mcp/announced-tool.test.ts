// One listing read as the device's and a bridge's tools are: bounds, shaping, safe distinct names.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readAnnouncedTools, type AnnouncedToolLimits } from '../../../mcp/announced-tool.ts';

const limits: AnnouncedToolLimits = {
  nameChars: 20,
  descriptionChars: 5,
  schema: { maxDepth: 3, maxNodes: 50 },
  maxTools: 3,
};

test('a listing: non-tools skipped, a repeated name kept once, bounds leave tools out with why, the rest past maxTools counted', () => {
  const raw = [
    'not a tool',
    { name: '' },
    {
      name: 'a.b',
      description: 'long description',
      inputSchema: { type: 'object', properties: { x: { type: 'string' } } },
    },
    { name: 'a.b', description: 'second listing of a name' },
    { name: 'n'.repeat(21) },
    { name: 'deep', inputSchema: { a: { b: { c: { d: 1 } } } } },
    { name: 'a_b' },
    { name: 'third' },
    { name: 'over1' },
    { name: 'over2' },
  ];
  const read = readAnnouncedTools(raw, limits, 'dev_');
  assert.deepEqual(
    read.specs.map((s) => s.name),
    ['dev_a_b', 'dev_a_b_2', 'dev_third'],
  );
  assert.equal(read.names.get('dev_a_b_2'), 'a_b', 'routed to the name the peer gave');
  assert.equal(read.specs[0]?.description, 'long ');
  assert.deepEqual(
    read.leftOut.map((t) => [t.name.slice(0, 4), t.problem, t.why]),
    [
      ['nnnn', 'nameTooLong', 'name longer than 20 characters'],
      ['deep', 'schemaTooDeep', 'nested deeper than 3'],
    ],
  );
  assert.equal(read.overCount, 2);
});

test('a schema that is not an object is replaced by the empty one; a bare object schema gets its properties, as the model is sent it', () => {
  const read = readAnnouncedTools(
    [
      { name: 'list', inputSchema: Array.from({ length: 1000 }, () => 1) },
      { name: 'none' },
      { name: 'bare', inputSchema: { type: 'object' } },
      { name: 'untyped', inputSchema: { properties: {} } },
    ],
    { descriptionChars: 100, schema: { maxDepth: 3, maxNodes: 50 } },
  );
  assert.deepEqual(read.leftOut, []);
  for (const s of read.specs) assert.deepEqual(s.inputSchema, { type: 'object', properties: {} }, s.name);
});
