/**
 * @module The device tool sets in use, shared between sessions. A fleet runs a few firmware
 * builds, each announcing the same tools on every connection: sessions whose devices' tools read
 * the same share one copy, frozen, instead of one each (about 1.5 KB of heap per idle session:
 * BENCHMARKS.md, "20,000 idle devices"). Bounded: a set over `MAX_SHARED_SET_BYTES` stays its
 * session's own, and the `MAX_SHARED_SETS` most recently used sets are kept; a set let go here
 * stays with the sessions that hold it.
 */
import { createHash } from 'node:crypto';

/** Sets larger than this (their key, the read as JSON) are not shared: a stranger cannot park big sets here. */
export const MAX_SHARED_SET_BYTES = 64 * 1024;
/** Distinct sets kept for sharing (firmware builds in a fleet; a test bench's a few more). */
export const MAX_SHARED_SETS = 16;

/** Freezes `v` and the plain objects and arrays it holds (a class instance's private state is its own). */
function deepFreeze<T>(v: T): T {
  if (typeof v !== 'object' || v === null || Object.isFrozen(v)) return v;
  Object.freeze(v);
  for (const x of Object.values(v)) deepFreeze(x);
  return v;
}

/** Shares reads of device tools that came out the same. */
export class SharedToolSets<R extends object> {
  readonly #sets = new Map<string, R>();

  /**
   * `made`, or the equal read kept from another session: `key` is everything `made` holds, as
   * text (equal keys, equal reads). A shared read is frozen, so no session can change another's.
   */
  share(key: string, made: R): R {
    if (key.length > MAX_SHARED_SET_BYTES) return made;
    // A digest as the map's key: the text itself need not be kept.
    const digest = createHash('sha256').update(key).digest('base64');
    const hit = this.#sets.get(digest);
    if (hit) {
      // Most recently used last: the first key is the one to let go.
      this.#sets.delete(digest);
      this.#sets.set(digest, hit);
      return hit;
    }
    deepFreeze(made);
    this.#sets.set(digest, made);
    if (this.#sets.size > MAX_SHARED_SETS) this.#sets.delete(this.#sets.keys().next().value as string);
    return made;
  }
}
