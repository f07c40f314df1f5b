/**
 * @module Loads the configuration: one YAML file (`--config FILE`, else env XIAOZHI_CONFIG, else
 * ./config.yaml when it exists, else the embedded defaults), then environment overrides, then one
 * zod validation. This is the only module that reads process.env.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import { z } from 'zod';
import { createConfigSchema } from './config-schema.ts';
import { applyLanguageDefaults } from '../features/agents/index.ts';
import { McpServersConfigSchema } from '../mcp/server-config.ts';
import { configSecrets } from '../core/config-secrets.ts';

/** The configuration's keys, as validated (its `.shape` lists the top-level sections). */
export const ConfigShapeSchema = createConfigSchema(McpServersConfigSchema.default({}));
/** What every configuration goes through: `language` fills the keys it switches, then validation. */
export const ConfigSchema = z.preprocess(applyLanguageDefaults, ConfigShapeSchema);
export type Config = z.output<typeof ConfigShapeSchema>;

/** A configuration problem: start-up stops with exit code 2 and this message. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

export interface LoadedConfig {
  config: Config;
  /** The file read, or null for embedded defaults. */
  file: string | null;
  /** Which environment variables overrode file values (names only, never values). */
  overrides: string[];
  /** Problems worth a warning at start (never holding a secret value), e.g. a config file with secrets that others can read. */
  warnings: string[];
}

export interface LoadConfigInput {
  argv?: readonly string[];
  env?: Readonly<Record<string, string | undefined>>;
  cwd?: string;
}

/** Picks the config file from argv/env/cwd. */
function chooseFile(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  cwd: string,
): string | null {
  const i = argv.findIndex((a) => a === '--config' || a.startsWith('--config='));
  if (i >= 0) {
    const arg = argv[i] as string;
    const value = arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : argv[i + 1];
    if (!value) throw new ConfigError('--config needs a file name');
    return resolve(cwd, value);
  }
  if (env.XIAOZHI_CONFIG) return resolve(cwd, env.XIAOZHI_CONFIG);
  const local = resolve(cwd, 'config.yaml');
  return existsSync(local) ? local : null;
}

function readYaml(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read config file ${file}: ${(err as Error).message}`);
  }
  let data: unknown;
  try {
    data = parseYaml(text);
  } catch (err) {
    const where = err instanceof YAMLParseError && err.linePos ? ` (line ${err.linePos[0].line})` : '';
    throw new ConfigError(`config file ${file} is not valid YAML${where}: ${(err as Error).message.split('\n')[0]}`);
  }
  if (data === null || data === undefined) return {};
  if (typeof data !== 'object' || Array.isArray(data))
    throw new ConfigError(`config file ${file} must hold a mapping of keys at the top level`);
  return data as Record<string, unknown>;
}

/**
 * A warning when the file holds secrets and its mode lets the group or other users read it: names
 * the file, the keys (never the values) and the fix. None on Windows (no POSIX modes).
 */
function readableSecretsWarning(file: string, raw: Record<string, unknown>): string | null {
  if (process.platform === 'win32') return null;
  let mode: number;
  try {
    mode = statSync(file).mode & 0o777;
  } catch {
    return null;
  }
  if ((mode & 0o044) === 0) return null;
  const keys = [...new Set(configSecrets(raw).map((s) => s.path))];
  if (keys.length === 0) return null;
  const who = mode & 0o004 ? 'every user on this machine' : 'its group';
  return `config file ${file} holds secrets (${keys.slice(0, 5).join(', ')}${keys.length > 5 ? ', ...' : ''}) and ${who} can read it (mode ${mode.toString(8).padStart(4, '0')}): run \`chmod 600 ${file}\``;
}

/** Sets `value` at `path` in a nested object, creating the mappings on the way. */
export function setPath(obj: Record<string, unknown>, path: string[], value: unknown): void {
  let cur = obj;
  for (const key of path.slice(0, -1)) {
    const next = cur[key];
    if (typeof next !== 'object' || next === null || Array.isArray(next)) cur[key] = {};
    cur = cur[key] as Record<string, unknown>;
  }
  cur[path[path.length - 1] as string] = value;
}

/** Environment variables that override config keys (documented in the README). */
const ENV_OVERRIDES: ReadonlyArray<{ name: string; path: string[]; parse?: (v: string) => unknown }> = [
  { name: 'HOST', path: ['server', 'host'] },
  { name: 'PORT', path: ['server', 'port'], parse: (v) => (/^\d+$/.test(v) ? Number(v) : v) },
  { name: 'OPENAI_BASE_URL', path: ['llm', 'baseURL'] },
  { name: 'OPENAI_API_KEY', path: ['llm', 'apiKey'] },
  { name: 'LLM_MODEL', path: ['llm', 'model'] },
  { name: 'LOG_LEVEL', path: ['logging', 'level'] },
  { name: 'PUBLIC_WS_URL', path: ['server', 'publicWsUrl'] },
  { name: 'XIAOZHI_DATA_DIR', path: ['server', 'dataDir'] },
  { name: 'DATABASE_URL', path: ['store', 'url'] },
  { name: 'DATABASE_PASSWORD', path: ['store', 'password'] },
  { name: 'ADMIN_TOKEN', path: ['admin', 'token'] },
  { name: 'XIAOZHI_BIND_COMMAND', path: ['server', 'auth', 'bindCommand'] },
];

/** Formats zod issues as `key.path: problem` lines. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 10)
    .map((i) => `  ${i.path.length ? i.path.join('.') : '(top level)'}: ${i.message}`)
    .join('\n');
}

/** Loads and validates the configuration. Throws ConfigError with the offending key named. */
export function loadConfig(input: LoadConfigInput = {}): LoadedConfig {
  const argv = input.argv ?? process.argv.slice(2);
  const env = input.env ?? process.env;
  const cwd = input.cwd ?? process.cwd();
  const file = chooseFile(argv, env, cwd);
  const raw = file ? readYaml(file) : {};
  // Checked before the environment overrides: only secrets written in the file count.
  const warning = file ? readableSecretsWarning(file, raw) : null;
  const overrides: string[] = [];
  for (const o of ENV_OVERRIDES) {
    const v = env[o.name];
    if (v === undefined || v === '') continue;
    setPath(raw, o.path, o.parse ? o.parse(v) : v);
    overrides.push(o.name);
  }
  const parsed = ConfigSchema.safeParse(raw);
  if (!parsed.success) {
    throw new ConfigError(`invalid configuration${file ? ` in ${file}` : ''}:\n${describeIssues(parsed.error)}`);
  }
  return { config: parsed.data, file, overrides, warnings: warning ? [warning] : [] };
}
