/** @module Cutting stored text to a bound without breaking a character. */

/** At most `max` UTF-16 units, cut before a character rather than inside one (a lone surrogate). */
export function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const high = text.charCodeAt(max - 1);
  return text.slice(0, high >= 0xd800 && high <= 0xdbff ? max - 1 : max);
}
