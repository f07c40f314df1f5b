/**
 * @module Helpers for logging values a stranger controls: they are cut to a short prefix so one
 * request cannot write megabytes into the log (200 OTA posts with long fields once made 47 MB).
 */

/** Longest client-supplied string written to the log, in characters. */
export const MAX_LOGGED_FIELD = 128;

/** The value cut to `max` characters, with the original length noted when it was cut. */
export function truncateForLog(value: string | undefined, max = MAX_LOGGED_FIELD): string | undefined {
  if (value === undefined || value.length <= max) return value;
  return `${value.slice(0, max)}…(${value.length} chars)`;
}
