/**
 * @module One string per distinct value of a JSON-like object, whatever the order its keys were
 * written in: what caches of clients built from options are keyed by (equal options, one client).
 */

/** JSON with object keys sorted at every level; `undefined` members are left out, as JSON does. */
export function stableKey(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    const sorted: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) sorted[k] = (v as Record<string, unknown>)[k];
    return sorted;
  });
}
