/**
 * @module Removes credentials from URLs before they are logged: the userinfo part
 * (`user:pass@`) and secret-bearing query values (`?api-key=`, `?key=`, `?token=`, ...). Used by
 * every log line that carries a URL, and on every finished log line for URLs inside free text
 * (an error message quoting the URL it failed on).
 */
import { REDACTED } from './secret-values.ts';

/** Query keys whose values are credentials. Matched after percent-decoding, as servers read them. */
const SECRET_QUERY_KEY =
  /^(?:authorization|auth|(?:access|refresh|id|api|auth)?[-_]?token|api[-_]?key|key|(?:client[-_]?)?secret|password|passwd|pwd|sig|signature|x-amz-signature|x-goog-signature)$/i;

/** `scheme://userinfo@` at the start of an absolute URL. */
const USERINFO = /^([a-z][a-z0-9+.-]*:\/\/)([^/?#@\s]*)@/i;

/** An absolute URL inside free text; stops at whitespace, quotes, angle brackets and backslashes (JSON escapes). */
const URL_IN_TEXT = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>\\`]+/gi;

/** True when a query key names a credential. */
export function isSecretQueryKey(key: string): boolean {
  let decoded = key;
  try {
    decoded = decodeURIComponent(key.replace(/\+/g, ' '));
  } catch {
    // A malformed escape: match the raw key.
  }
  return SECRET_QUERY_KEY.test(decoded.trim());
}

/**
 * The URL (absolute, or a path with a query) with its userinfo and secret query values replaced by
 * `[Redacted]`; host, path and other parameters are kept so the line still says where it went.
 */
export function redactUrl(url: string): string {
  return url
    .replace(USERINFO, (_whole, scheme: string) => `${scheme}${REDACTED}@`)
    .replace(/([?&;])([^=&#;]*)=([^&#;]*)/g, (whole, sep: string, key: string) =>
      isSecretQueryKey(key) ? `${sep}${key}=${REDACTED}` : whole,
    );
}

/** Every absolute URL inside `text` passed through `redactUrl`. */
export function redactUrlsInText(text: string): string {
  return text.includes('://') ? text.replace(URL_IN_TEXT, redactUrl) : text;
}

/** The credentials a URL carries (userinfo password, or a lone user name; secret query values), for registering as secrets. */
export function urlCredentials(url: string): string[] {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return [];
  }
  const out: string[] = [];
  // The user name is a credential only when it stands alone (`https://TOKEN@host`).
  for (const part of parsed.password ? [parsed.password] : [parsed.username]) {
    if (!part) continue;
    out.push(part);
    try {
      out.push(decodeURIComponent(part));
    } catch {
      // Kept in its written form only.
    }
  }
  for (const [key, value] of parsed.searchParams) if (value && isSecretQueryKey(key)) out.push(value);
  return [...new Set(out)];
}
