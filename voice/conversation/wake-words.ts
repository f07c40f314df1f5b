/**
 * @module The configured wake words, as the conversation compares transcripts with them. Normalized
 * once per configuration and shared by every session (a set of its own was ~400 bytes of heap per
 * connected device: BENCHMARKS.md, "20,000 idle devices").
 */

/** Normalizes a transcript for comparison: lowercase, no punctuation or spaces. */
export function normalizeWake(text: string): string {
  return text.toLowerCase().replace(/[\s\p{P}\p{S}]+/gu, '');
}

/** One normalized set per configured list (the configuration's own array). */
const sets = new WeakMap<readonly string[], ReadonlySet<string>>();

/** The normalized set of `configured`, made once for that list. */
export function wakeWordSet(configured: readonly string[]): ReadonlySet<string> {
  let set = sets.get(configured);
  if (!set) {
    set = new Set(configured.map(normalizeWake));
    sets.set(configured, set);
  }
  return set;
}

/** `text` says one of the wake words (case, punctuation and spacing aside). */
export function isWakeWord(words: ReadonlySet<string>, text: string): boolean {
  return words.has(normalizeWake(text));
}
