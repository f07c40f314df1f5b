import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeRoom } from '../../../core/bounded-map.ts';

test('makeRoom forgets the oldest entries until one more fits', () => {
  const m = new Map([
    ['a', 1],
    ['b', 2],
    ['c', 3],
    ['d', 4],
  ]);
  makeRoom(m, 3);
  assert.deepEqual([...m.keys()], ['c', 'd']);
  makeRoom(m, 3);
  assert.deepEqual([...m.keys()], ['c', 'd'], 'a map with room is left alone');
});
