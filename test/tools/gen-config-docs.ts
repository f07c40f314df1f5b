/**
 * Keeps docs/configuration.md in step with the zod schema. The key tables between the GENERATED
 * markers are rebuilt from the schema (keys, types, defaults); descriptions are kept from the
 * current file by table and key, and new keys get an empty description for a person to fill in.
 *
 *   npx tsx test/tools/gen-config-docs.ts           rewrite docs/configuration.md
 *   npx tsx test/tools/gen-config-docs.ts --check   exit 1 when the file is out of date
 *
 * test/integration/ops/config-docs.test.ts runs the same check, so the reference cannot drift.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { ConfigSchema } from '../../server/config.ts';

export const DOC_FILE = fileURLToPath(new URL('../../docs/configuration.md', import.meta.url));
export const BEGIN = '<!-- BEGIN GENERATED: npx tsx test/tools/gen-config-docs.ts -->';
export const END = '<!-- END GENERATED -->';

/** The subset of JSON Schema that z.toJSONSchema emits for our schema. */
interface JsonSchema {
  type?: string;
  properties?: Record<string, JsonSchema>;
  additionalProperties?: JsonSchema | boolean;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  const?: unknown;
  enum?: unknown[];
  default?: unknown;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  format?: string;
  required?: string[];
}

export interface KeyRow {
  key: string;
  type: string;
  /** JSON of the default, or '' for none. */
  default: string;
  required: boolean;
}

export interface KeyTable {
  /** `server`, `asr (provider: openai)`, `mcpServers.<name> (stdio)` ... */
  title: string;
  rows: KeyRow[];
}

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

const isObject = (s: JsonSchema): boolean => s.type === 'object' && s.properties !== undefined;
const isRecordOfObjects = (s: JsonSchema): boolean =>
  s.type === 'object' &&
  s.properties === undefined &&
  typeof s.additionalProperties === 'object' &&
  describeVariants(s.additionalProperties).length > 0;

/** Object variants of a union (discriminated or not); [] when the schema is no union of objects. */
function describeVariants(s: JsonSchema): JsonSchema[] {
  if (isObject(s)) return [s];
  const options = s.oneOf ?? s.anyOf;
  return options && options.every(isObject) ? options : [];
}

function range(s: JsonSchema): string {
  const lo = s.minimum ?? (s.exclusiveMinimum !== undefined ? `>${s.exclusiveMinimum}` : undefined);
  const hi = s.maximum !== undefined && s.maximum < MAX_SAFE ? s.maximum : undefined;
  if (lo === undefined && hi === undefined) return '';
  if (hi === undefined) return typeof lo === 'string' ? ` ${lo}` : ` ≥${lo}`;
  return ` ${lo ?? ''}–${hi}`;
}

/** A short human type: `integer 0–65535`, `"silero" \| "webrtc"`, `string[]`, `map of string`. */
export function typeOf(s: JsonSchema): string {
  if (s.const !== undefined) return JSON.stringify(s.const);
  if (s.enum) return s.enum.map((v) => JSON.stringify(v)).join(' | ');
  const options = s.anyOf ?? s.oneOf;
  if (options) return options.map(typeOf).join(' | ');
  switch (s.type) {
    case 'integer':
    case 'number':
      return `${s.type}${range(s)}`;
    case 'string':
      return s.format === 'uri' ? 'URL' : 'string';
    case 'array':
      return s.items ? `${typeOf(s.items).includes(' ') ? `(${typeOf(s.items)})` : typeOf(s.items)}[]` : 'array';
    case 'object':
      return typeof s.additionalProperties === 'object' ? `map of ${typeOf(s.additionalProperties)}` : 'object';
    case 'boolean':
    case 'null':
      return s.type;
    default:
      return 'any';
  }
}

function variantLabel(v: JsonSchema, i: number): string {
  const provider = v.properties?.provider?.const;
  if (provider !== undefined) return `provider: ${String(provider)}`;
  if (v.properties?.command) return 'stdio';
  if (v.properties?.url) return 'HTTP';
  return `variant ${i + 1}`;
}

/** Flattens the schema into tables of leaf keys, one table per object (and per union variant). */
export function configTables(): KeyTable[] {
  const root = z.toJSONSchema(ConfigSchema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  const tables: KeyTable[] = [];
  const walk = (s: JsonSchema, path: string, title: string): void => {
    const rows: KeyRow[] = [];
    const nested: Array<() => void> = [];
    for (const [name, prop] of Object.entries(s.properties ?? {})) {
      const key = path ? `${path}.${name}` : name;
      const required = (s.required ?? []).includes(name);
      const variants = describeVariants(prop);
      if (variants.length === 1) {
        nested.push(() => walk(variants[0] as JsonSchema, key, key));
      } else if (variants.length > 1) {
        variants.forEach((v, i) => nested.push(() => walk(v, key, `${key} (${variantLabel(v, i)})`)));
      } else if (isRecordOfObjects(prop)) {
        const inner = describeVariants(prop.additionalProperties as JsonSchema);
        const at = `${key}.<name>`;
        inner.forEach((v, i) =>
          nested.push(() => walk(v, at, inner.length > 1 ? `${at} (${variantLabel(v, i)})` : at)),
        );
      } else {
        rows.push({
          key,
          type: typeOf(prop),
          default: prop.default === undefined ? '' : JSON.stringify(prop.default),
          required,
        });
      }
    }
    if (rows.length > 0) tables.push({ title, rows });
    for (const n of nested) n();
  };
  walk(root, '', '(top level)');
  // Shared parts of union variants (e.g. `mcpServers.<name>.resources`) are listed once.
  const seen = new Set<string>();
  return tables.filter((t) => {
    const id = JSON.stringify(t);
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
}

const cell = (s: string): string => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
const uncell = (s: string): string => s.trim().replace(/\\\|/g, '|');
const tableId = (title: string, key: string): string => `${title}\u0000${key}`;

/** Descriptions in the current file, by table title and key. */
export function parseDescriptions(markdown: string): Map<string, string> {
  const out = new Map<string, string>();
  let title = '';
  for (const line of markdown.split('\n')) {
    const h = /^### `([^`]+)`(?: \(([^)]+)\))?\s*$/.exec(line);
    if (h) {
      title = h[2] ? `${h[1]} (${h[2]})` : (h[1] as string);
      continue;
    }
    const cells = line.match(/(?:\\\||[^|])+/g);
    if (!line.startsWith('| `') || !cells || cells.length < 4) continue;
    const key = /`([^`]+)`/.exec(cells[0] as string)?.[1];
    if (key) out.set(tableId(title, key), uncell(cells.slice(3).join('|')));
  }
  return out;
}

/** Every documented (table, key) pair in a file: what the docs test compares with the schema. */
export function documentedKeys(markdown: string): string[] {
  return [...parseDescriptions(markdown).keys()].map((k) => k.replace('\u0000', ' → '));
}

export function schemaKeys(tables: readonly KeyTable[] = configTables()): string[] {
  return tables.flatMap((t) => t.rows.map((r) => `${t.title} → ${r.key}`));
}

/** The generated block for the given tables, descriptions taken from `descriptions`. */
export function renderTables(tables: readonly KeyTable[], descriptions: ReadonlyMap<string, string>): string {
  const parts: string[] = [BEGIN, ''];
  for (const t of tables) {
    const m = /^(.*?)(?: \((.+)\))?$/.exec(t.title) as RegExpExecArray;
    parts.push(m[2] ? `### \`${m[1]}\` (${m[2]})` : `### \`${m[1]}\``, '');
    parts.push('| key | type | default | description |', '|---|---|---|---|');
    for (const r of t.rows) {
      const def = r.default === '' ? (r.required ? '**required**' : '—') : `\`${cell(r.default)}\``;
      parts.push(
        `| \`${r.key}\` | ${cell(r.type)} | ${def} | ${cell(descriptions.get(tableId(t.title, r.key)) ?? '')} |`,
      );
    }
    parts.push('');
  }
  parts.push(END);
  return parts.join('\n');
}

/** The whole file as it should be: the current prose around a freshly generated block. */
export function regenerate(current: string): string {
  const start = current.indexOf(BEGIN);
  const end = current.indexOf(END);
  if (start < 0 || end < start) throw new Error(`${DOC_FILE} lacks the GENERATED markers`);
  return (
    current.slice(0, start) + renderTables(configTables(), parseDescriptions(current)) + current.slice(end + END.length)
  );
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const current = readFileSync(DOC_FILE, 'utf8');
  const next = regenerate(current);
  if (process.argv.includes('--check')) {
    if (next !== current) {
      process.stderr.write('docs/configuration.md is out of date: run npx tsx test/tools/gen-config-docs.ts\n');
      process.exit(1);
    }
  } else if (next !== current) {
    writeFileSync(DOC_FILE, next);
    process.stderr.write('docs/configuration.md updated\n');
  }
}
