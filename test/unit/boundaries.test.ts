/**
 * The import table of ARCHITECTURE.md, checked from the source text (independently of ESLint):
 * which of our folders each folder may import, llm/ and providers/ taking only types from mcp/, only
 * server/config.ts reading process.env, and session code staying free of Fastify and ws.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');
const FOLDERS = ['core', 'protocol', 'audio', 'mcp', 'llm', 'providers', 'voice', 'store', 'transport', 'server', 'examples'] as const;
const ALLOWED: Record<(typeof FOLDERS)[number], readonly string[]> = {
  core: [],
  protocol: ['core'],
  audio: ['core'],
  mcp: ['core'],
  llm: ['core', 'mcp(types)'],
  providers: ['core', 'audio', 'llm', 'mcp(types)'],
  voice: ['core', 'protocol', 'audio', 'mcp', 'llm'],
  store: ['core', 'protocol'],
  // Moved out of server/ as it was: its imports of server/ go in the commits that follow.
  transport: ['core', 'protocol', 'voice', 'store', 'server'],
  server: ['core', 'protocol', 'audio', 'mcp', 'llm', 'providers', 'voice', 'store', 'transport'],
  examples: [],
};

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    return out;
  }
  for (const name of names) {
    const p = join(dir, name);
    if (name === 'node_modules') continue;
    if (statSync(p).isDirectory()) out.push(...tsFiles(p));
    else if (name.endsWith('.ts')) out.push(p);
  }
  return out;
}

const IMPORT_RE = /^\s*(import|export)\s+(type\s+)?[^'"]*?from\s+['"]([^'"]+)['"]|^\s*import\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/gm;

test('every source folder imports only what ARCHITECTURE.md allows', () => {
  const violations: string[] = [];
  let checked = 0;
  for (const folder of FOLDERS) {
    for (const file of tsFiles(join(ROOT, folder))) {
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(IMPORT_RE)) {
        const spec = m[3] ?? m[4] ?? m[5];
        if (!spec || !spec.startsWith('.')) continue;
        checked++;
        const target = relative(ROOT, resolve(dirname(file), spec)).split('/')[0] ?? '';
        if (target === folder) continue;
        const typeOnly = m[2] !== undefined;
        const ok = ALLOWED[folder].includes(target) || (typeOnly && ALLOWED[folder].includes(`${target}(types)`));
        if (!ok) violations.push(`${relative(ROOT, file)} imports ${spec}${typeOnly ? ' (type)' : ''}`);
      }
    }
  }
  assert.ok(checked > 10, 'the scan found imports to check');
  assert.deepEqual(violations, []);
});

test('only server/config.ts reads process.env', () => {
  const offenders: string[] = [];
  for (const folder of ['core', 'protocol', 'audio', 'mcp', 'llm', 'providers', 'voice', 'store', 'transport', 'server']) {
    for (const file of tsFiles(join(ROOT, folder))) {
      const rel = relative(ROOT, file);
      if (rel === 'server/config.ts') continue;
      // Writes onnxruntime's telemetry opt-out, the one variable that library reads; reads no configuration.
      if (rel === 'audio/vad/onnx-telemetry.ts') continue;
      if (/process\.env/.test(readFileSync(file, 'utf8').replace(/\/\/.*$|\/\*[\s\S]*?\*\//gm, ''))) offenders.push(rel);
    }
  }
  assert.deepEqual(offenders, []);
});

test('voice/ does not import fastify or ws', () => {
  const offenders = tsFiles(join(ROOT, 'voice')).filter((f) => /from\s+['"](fastify|ws|@fastify\/[^'"]+)['"]/.test(readFileSync(f, 'utf8')));
  assert.deepEqual(offenders.map((f) => relative(ROOT, f)), []);
});
