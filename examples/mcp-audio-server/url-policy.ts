/**
 * @module Which URLs the reader may open (no SSRF): http(s) only to allowlisted hosts, file://
 * only inside the catalog folder. Every redirect target is checked again by the reader.
 */
import { realpath } from 'node:fs/promises';
import { sep } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface UrlPolicy {
  /** `example.com`, `*.example.com` (default port only) or `host:port` entries, lower case. */
  allowHosts: readonly string[];
  /** Real path of the local music folder; file:// URLs must be inside it. */
  musicRoot?: string;
}

/** Outcome of a check: the parsed URL, or why it is refused (said to the client as is). */
export type UrlVerdict = { ok: true; url: URL; localPath?: string } | { ok: false; reason: string };

/** Normalizes allowlist entries: lower case, no scheme or path. */
export function normalizeHosts(entries: readonly string[]): string[] {
  return entries
    .map((e) =>
      e
        .trim()
        .toLowerCase()
        .replace(/^[a-z]+:\/\//, '')
        .replace(/\/.*$/, ''),
    )
    .filter((e) => e !== '');
}

/** Checks a URL against the policy; file:// paths are resolved (symlinks too) before the containment check. */
export async function checkUrl(raw: string, policy: UrlPolicy): Promise<UrlVerdict> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: `"${raw.slice(0, 200)}" is not a valid URL` };
  }
  if (url.protocol === 'file:') {
    if (policy.musicRoot === undefined)
      return { ok: false, reason: 'file:// URLs are refused: no music folder is configured' };
    let path: string;
    try {
      path = await realpath(fileURLToPath(url));
    } catch {
      return { ok: false, reason: `${url.pathname} does not exist` };
    }
    const root = policy.musicRoot.endsWith(sep) ? policy.musicRoot : policy.musicRoot + sep;
    if (!path.startsWith(root)) return { ok: false, reason: `${url.pathname} is outside the music folder` };
    return { ok: true, url, localPath: path };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return {
      ok: false,
      reason: `the ${url.protocol.replace(':', '')} scheme is refused: only http and https are read`,
    };
  }
  if (url.username !== '' || url.password !== '') return { ok: false, reason: 'URLs with credentials are refused' };
  if (!hostAllowed(url, policy.allowHosts)) {
    return {
      ok: false,
      reason: `host ${url.host} is not in the allowlist (${policy.allowHosts.join(', ') || 'empty'})`,
    };
  }
  return { ok: true, url };
}

function hostAllowed(url: URL, allow: readonly string[]): boolean {
  const hostname = url.hostname.toLowerCase();
  const host = url.host.toLowerCase();
  return allow.some((entry) => {
    if (entry.startsWith('*.')) return hostname.endsWith(entry.slice(1)) && hostname.length > entry.length - 1;
    // An entry without a port allows only the scheme's default port (url.port is '' then).
    return entry.includes(':') && !entry.startsWith('[')
      ? entry === host
      : entry === host || (entry === hostname && url.port === '');
  });
}
