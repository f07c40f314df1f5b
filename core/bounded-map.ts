/**
 * @module Keeping a map that strangers fill bounded: a Map iterates in insertion order, so its
 * first keys are the oldest, and those are the ones forgotten.
 */

/** Deletes the oldest entries of `map` until it holds fewer than `max`, making room for one more. */
export function makeRoom<K, V>(map: Map<K, V>, max: number): void {
  for (const key of map.keys()) {
    if (map.size < max) return;
    map.delete(key);
  }
}
