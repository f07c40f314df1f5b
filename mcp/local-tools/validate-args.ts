/**
 * @module A small JSON Schema check for local tool arguments: the subset tool schemas use (`type`,
 * `properties`, `required`, `enum`, `items`, `minimum`/`maximum`, `minLength`/`maxLength`,
 * `additionalProperties: false`). Unknown keywords are ignored, so a richer schema still passes
 * what it can check. Errors are phrased for the model, which reads them and retries.
 */
import type { JsonSchema } from '../contract/tool-source.ts';

function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function matchesType(v: unknown, type: string): boolean {
  const actual = typeOf(v);
  return actual === type || (type === 'number' && actual === 'integer');
}

const label = (path: string): string => (path === '' ? 'arguments' : path);

function check(value: unknown, schema: Record<string, unknown>, path: string, errors: string[]): void {
  const type = schema.type;
  if (typeof type === 'string' || Array.isArray(type)) {
    const types = (Array.isArray(type) ? type : [type]).filter((t): t is string => typeof t === 'string');
    if (types.length > 0 && !types.some((t) => matchesType(value, t))) {
      errors.push(`${label(path)} must be ${types.join(' or ')}, got ${typeOf(value)}`);
      return;
    }
  }
  if (Array.isArray(schema.enum) && !schema.enum.some((e) => e === value)) {
    errors.push(`${label(path)} must be one of ${schema.enum.map((e) => JSON.stringify(e)).join(', ')}`);
  }
  if (typeof value === 'number') {
    if (typeof schema.minimum === 'number' && value < schema.minimum)
      errors.push(`${label(path)} must be >= ${schema.minimum}`);
    if (typeof schema.maximum === 'number' && value > schema.maximum)
      errors.push(`${label(path)} must be <= ${schema.maximum}`);
  }
  if (typeof value === 'string') {
    if (typeof schema.minLength === 'number' && value.length < schema.minLength)
      errors.push(`${label(path)} must have at least ${schema.minLength} characters`);
    if (typeof schema.maxLength === 'number' && value.length > schema.maxLength)
      errors.push(`${label(path)} must have at most ${schema.maxLength} characters`);
  }
  if (Array.isArray(value) && typeof schema.items === 'object' && schema.items !== null) {
    value.forEach((item, i) => check(item, schema.items as Record<string, unknown>, `${path}[${i}]`, errors));
  }
  if (typeOf(value) === 'object') {
    const obj = value as Record<string, unknown>;
    const props = (
      typeof schema.properties === 'object' && schema.properties !== null ? schema.properties : {}
    ) as Record<string, unknown>;
    if (Array.isArray(schema.required)) {
      for (const key of schema.required) {
        if (typeof key === 'string' && obj[key] === undefined)
          errors.push(`${path === '' ? '' : `${path}.`}${key} is required`);
      }
    }
    for (const [key, v] of Object.entries(obj)) {
      const sub = props[key];
      const at = path === '' ? key : `${path}.${key}`;
      if (typeof sub === 'object' && sub !== null) check(v, sub as Record<string, unknown>, at, errors);
      else if (schema.additionalProperties === false) errors.push(`${at} is not a known argument`);
    }
  }
}

/** Returns the problems with `args` under `schema`; empty when they fit. */
export function validateArgs(args: Record<string, unknown>, schema: JsonSchema): string[] {
  const errors: string[] = [];
  check(args, { ...schema, type: schema.type ?? 'object' }, '', errors);
  return errors;
}
