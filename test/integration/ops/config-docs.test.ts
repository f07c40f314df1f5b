/**
 * The configuration reference cannot drift from the schema: every key of the zod schema is in
 * docs/configuration.md and every key documented there exists in the schema, with the schema's
 * type and default, and each one has a description.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ConfigSchema, ConfigShapeSchema } from '../../../server/config.ts';
import {
  configTables,
  documentedKeys,
  DOC_FILE,
  parseDescriptions,
  regenerate,
  schemaKeys,
} from '../../tools/gen-config-docs.ts';

describe('configuration reference (docs/configuration.md)', () => {
  const doc = readFileSync(DOC_FILE, 'utf8');

  test('every schema key is documented and every documented key exists in the schema', () => {
    const inSchema = new Set(schemaKeys());
    const inDocs = new Set(documentedKeys(doc));
    const missing = [...inSchema].filter((k) => !inDocs.has(k));
    const unknown = [...inDocs].filter((k) => !inSchema.has(k));
    assert.deepEqual(
      missing,
      [],
      `keys missing from the docs (run npx tsx test/tools/gen-config-docs.ts): ${missing.join(', ')}`,
    );
    assert.deepEqual(unknown, [], `documented keys that the schema does not have: ${unknown.join(', ')}`);
    // The walk found the whole schema, not an empty subset that would make this test vacuous.
    const topLevel = new Set([...inSchema].map((k) => (k.split(' → ')[1] ?? '').split('.')[0]));
    assert.deepEqual([...topLevel].sort(), Object.keys(ConfigShapeSchema.shape).sort());
  });

  test("types and defaults in the tables are the schema's (the generated block is current)", () => {
    assert.equal(
      regenerate(doc),
      doc,
      'docs/configuration.md is out of date: run npx tsx test/tools/gen-config-docs.ts',
    );
  });

  test('every documented key has a description', () => {
    const descriptions = parseDescriptions(doc);
    const empty = [...descriptions].filter(([, d]) => d.trim() === '').map(([k]) => k.replace('\u0000', ' → '));
    assert.deepEqual(empty, []);
    assert.ok(configTables().length >= 10);
  });

  test('a documented default is what the schema applies when the key is left out', () => {
    const parsed = ConfigSchema.parse({}) as unknown as Record<string, Record<string, unknown>>;
    const port = /\| `server\.port` \| [^|]+ \| `(\d+)` \|/.exec(doc)?.[1];
    assert.equal(Number(port), parsed.server?.port);
    const level = /\| `logging\.level` \| .+? \| `"(\w+)"` \|/.exec(doc)?.[1];
    assert.equal(level, parsed.logging?.level);
  });
});
