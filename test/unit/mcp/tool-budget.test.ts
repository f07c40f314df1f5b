// The size budget of a set of tools (a device's, an agent's bridges'): under it nothing changes; over it descriptions are cut
// (the tool's and those in its schema), then tools dropped from the last.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fitToolBudget, SHORT_DESCRIPTION_CHARS, toolSpecBytes } from '../../../mcp/tool-budget.ts';
import type { ToolSpec } from '../../../mcp/contract/tool-source.ts';

const tool = (name: string, descChars: number, propDescChars: number): ToolSpec => ({
  name,
  description: 'd'.repeat(descChars),
  inputSchema: {
    type: 'object',
    properties: {
      v: { type: 'string', description: 'p'.repeat(propDescChars) },
      list: { type: 'array', items: [{ description: 'i'.repeat(propDescChars) }] },
    },
  },
});

test('within the budget the specs are returned as they are', () => {
  const specs = [tool('a', 50, 50), tool('b', 50, 50)];
  const fit = fitToolBudget(specs, 10_000);
  assert.equal(fit.specs, specs);
  assert.deepEqual([fit.shortened, fit.dropped], [[], []]);
  assert.equal(fit.bytesAfter, fit.bytesBefore);
});

test('over the budget: descriptions cut first, which is enough here', () => {
  const specs = [tool('a', 1000, 1000), tool('b', 100, 100)];
  const fit = fitToolBudget(specs, 2000);
  assert.deepEqual(fit.shortened, ['a']);
  assert.deepEqual(fit.dropped, []);
  const a = fit.specs[0] as ToolSpec;
  assert.equal(a.description?.length, SHORT_DESCRIPTION_CHARS);
  const props = a.inputSchema.properties as {
    v: { description: string };
    list: { items: Array<{ description: string }> };
  };
  assert.equal(props.v.description.length, SHORT_DESCRIPTION_CHARS);
  assert.equal(props.list.items[0]?.description.length, SHORT_DESCRIPTION_CHARS, 'inside arrays too');
  assert.equal(fit.specs[1], specs[1], 'a tool with short descriptions is kept as it was');
  assert.equal(
    fit.bytesAfter,
    fit.specs.reduce((n, s) => n + toolSpecBytes(s), 0),
  );
  assert.ok(fit.bytesAfter <= 2000);
  assert.equal((specs[0] as ToolSpec).description?.length, 1000, 'the input is not changed');
});

test('still over: tools dropped from the last; one that alone exceeds the budget leaves none', () => {
  const specs = Array.from({ length: 10 }, (_, i) => tool(`t${i}`, 500, 500));
  const fit = fitToolBudget(specs, 2500);
  assert.ok(fit.specs.length > 0 && fit.specs.length < 10);
  assert.deepEqual(
    fit.specs.map((s) => s.name),
    specs.slice(0, fit.specs.length).map((s) => s.name),
  );
  assert.deepEqual(
    fit.dropped,
    specs.slice(fit.specs.length).map((s) => s.name),
  );
  assert.ok(fit.bytesAfter <= 2500);
  assert.equal(fitToolBudget(specs, 100).specs.length, 0);
});

test('a cut never splits a character outside the BMP', () => {
  const fit = fitToolBudget(
    [{ name: 'e', description: '😀'.repeat(300), inputSchema: { type: 'object', properties: {} } }],
    1000,
  );
  assert.equal(Array.from(fit.specs[0]?.description ?? '').length, SHORT_DESCRIPTION_CHARS);
  assert.ok(!/[\uD800-\uDBFF]$/.test(fit.specs[0]?.description ?? ''));
});

test('a bound on the count drops tools from the last, without cutting descriptions when the bytes fit', () => {
  const specs = [tool('a', 300, 10), tool('b', 300, 10), tool('c', 300, 10)];
  const fit = fitToolBudget(specs, 100_000, 2);
  assert.deepEqual(
    fit.specs.map((s) => s.name),
    ['a', 'b'],
  );
  assert.deepEqual([fit.shortened, fit.dropped], [[], ['c']]);
  assert.equal(fit.specs[0], specs[0], 'kept as it was');
});
