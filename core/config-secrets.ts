/**
 * @module Registers every secret value found in the configuration with the log redactor: API
 * keys, auth tokens, the admin secret, and header and environment values given to providers and
 * MCP servers (those carry keys as often as not), and credentials written into any configured URL
 * (`user:pass@`, `?api-key=`), so an error text echoing them alone is redacted too.
 */
import type { SecretValues } from './secret-values.ts';
import { urlCredentials } from './redact-url.ts';

const SECRET_KEY = /key|token|secret|password|authorization|bearer|cookie|credential/i;

/** `config`: the server's validated configuration (or any settings object). */
export function registerConfigSecrets(secrets: SecretValues, config: object): void {
  for (const s of configSecrets(config)) secrets.add(s.value);
}

/** A secret value found in a configuration, with the key path it sits under (`llm.apiKey`). */
export interface ConfigSecret {
  path: string;
  value: string;
}

/**
 * Every non-empty secret value in a configuration (validated, or the raw mapping read from a file),
 * with its key path: values under secret-sounding keys, header and env values, the token of a
 * `Bearer` value, and credentials written into URLs.
 */
export function configSecrets(config: unknown): ConfigSecret[] {
  const out: ConfigSecret[] = [];
  walk(config, '', out);
  return out;
}

function walk(value: unknown, key: string, out: ConfigSecret[]): void {
  if (typeof value === 'string') {
    if (value === '') return;
    if (SECRET_KEY.test(key) || /(^|\.)(headers|env)\./.test(key)) {
      out.push({ path: key, value });
      // `Bearer x` in a header: the token alone appears in other places too.
      const bearer = /^Bearer\s+(.+)$/i.exec(value);
      if (bearer?.[1]) out.push({ path: key, value: bearer[1] });
    }
    if (value.includes('://')) for (const c of urlCredentials(value)) out.push({ path: key, value: c });
    return;
  }
  if (Array.isArray(value)) {
    for (const v of value) walk(v, key, out);
    return;
  }
  if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) walk(v, key ? `${key}.${k}` : k, out);
  }
}
