/**
 * @module Registers every secret value found in the configuration with the log redactor: API
 * keys, auth tokens, the admin secret, and header and environment values given to providers and
 * MCP servers (those carry keys as often as not), and credentials written into any configured URL
 * (`user:pass@`, `?api-key=`), so an error text echoing them alone is redacted too.
 */
import type { SecretValues } from '../core/secret-values.ts';
import { urlCredentials } from '../core/redact-url.ts';
import type { Config } from './config.ts';

const SECRET_KEY = /key|token|secret|password|authorization|bearer|cookie|credential/i;

export function registerConfigSecrets(secrets: SecretValues, config: Config): void {
  walk(config, '', secrets);
}

function walk(value: unknown, key: string, secrets: SecretValues): void {
  if (typeof value === 'string') {
    if (SECRET_KEY.test(key) || /(^|\.)(headers|env)\./.test(key)) {
      secrets.add(value);
      // `Bearer x` in a header: the token alone appears in other places too.
      const bearer = /^Bearer\s+(.+)$/i.exec(value);
      if (bearer?.[1]) secrets.add(bearer[1]);
    }
    if (value.includes('://')) for (const c of urlCredentials(value)) secrets.add(c);
    return;
  }
  if (Array.isArray(value)) {
    for (const v of value) walk(v, key, secrets);
    return;
  }
  if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) walk(v, key ? `${key}.${k}` : k, secrets);
  }
}
