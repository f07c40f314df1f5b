/**
 * @module When a `resources/updated` URI concerns another URI. The spec lets a server notify a
 * sub-resource of the one subscribed, so equality is too strict; a bare prefix test is too loose
 * (`…/a` is not a parent of `…/ab`). A URI covers another when they are equal or one continues the
 * other after a path, query or fragment boundary.
 */
export function uriCovers(parent: string, child: string): boolean {
  if (parent === child) return true;
  if (!child.startsWith(parent)) return false;
  if (/[/?#]$/.test(parent)) return true;
  const next = child.charAt(parent.length);
  return next === '/' || next === '?' || next === '#';
}

/** True when an update of `updated` may have changed `uri` (either contains the other). */
export function updateConcerns(updated: string, uri: string): boolean {
  return uriCovers(uri, updated) || uriCovers(updated, uri);
}
