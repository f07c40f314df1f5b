/**
 * @module Which firmware a device runs, as far as push cares: whether its version (as it reported
 * it at OTA, e.g. `2.4.2` or `1.6.0-rc1`) is at least a numeric dotted version. Pure.
 */

/** The leading numeric dotted part of a version (`2.4.2-rc1` → [2, 4, 2]); undefined when there is none. */
export function versionParts(version: string): number[] | undefined {
  const m = /^\s*v?(\d+(?:\.\d+)*)/i.exec(version);
  if (!m?.[1]) return undefined;
  return m[1].split('.').map(Number);
}

/** True when `version` is at least `min` (missing parts count as 0); false when `version` is unknown or unreadable. */
export function versionAtLeast(version: string | null | undefined, min: string): boolean {
  if (!version) return false;
  const a = versionParts(version);
  const b = versionParts(min);
  if (!a || !b) return false;
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    if (x !== y) return x > y;
  }
  return true;
}
