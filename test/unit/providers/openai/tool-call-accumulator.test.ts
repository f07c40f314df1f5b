/** Tool calls rebuilt from streamed chat-completion deltas (providers/openai/tool-call-accumulator.ts). */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createToolCallAccumulator } from '../../../../providers/openai/tool-call-accumulator.ts';

describe('tool call accumulator', () => {
  test('interleaved deltas by index, missing ids generated', () => {
    const acc = createToolCallAccumulator();
    acc.add({ index: 1, id: 'b', function: { name: 'two', arguments: '' } });
    acc.add({ index: 0, function: { name: 'one', arguments: '{"a"' } });
    acc.add({ index: 1, function: { arguments: '{}' } });
    acc.add({ index: 0, function: { arguments: ':1}' } });
    assert.deepEqual(acc.calls(), [
      { id: 'call_0', name: 'one', arguments: '{"a":1}' },
      { id: 'b', name: 'two', arguments: '{}' },
    ]);
  });

  test('deltas without index (some local servers)', () => {
    const acc = createToolCallAccumulator();
    acc.add({ id: 'x', function: { name: 'f', arguments: '{"q":' } });
    acc.add({ function: { arguments: '2}' } });
    acc.add({ id: 'y', function: { name: 'g', arguments: '{}' } });
    assert.deepEqual(acc.calls(), [
      { id: 'x', name: 'f', arguments: '{"q":2}' },
      { id: 'y', name: 'g', arguments: '{}' },
    ]);
  });
});
