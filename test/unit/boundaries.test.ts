/**
 * The import table of ARCHITECTURE.md, checked from the source text (independently of ESLint):
 * which of our folders each folder may import, llm/ and providers/ taking only types from mcp/, only
 * server/config.ts reading process.env, session code staying free of Fastify and ws, and each
 * transport in transport/ a folder of its own that shares only transport/'s root.
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
  transport: ['core', 'protocol', 'voice', 'store'],
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

/** The relative imports of `file`, resolved and relative to the checkout. */
function importsOf(file: string): string[] {
  const out: string[] = [];
  for (const m of readFileSync(file, 'utf8').matchAll(IMPORT_RE)) {
    const spec = m[3] ?? m[4] ?? m[5];
    if (spec?.startsWith('.')) out.push(relative(ROOT, resolve(dirname(file), spec)));
  }
  return out;
}

test('transport/: each transport is one folder that imports no other; the root (contract and shared parts) imports none of them', () => {
  const dir = join(ROOT, 'transport');
  const transports = readdirSync(dir).filter((n) => statSync(join(dir, n)).isDirectory());
  assert.ok(transports.includes('ws') && transports.includes('mqtt'), `the transports found: ${transports.join(', ')}`);
  const offenders: string[] = [];
  for (const file of tsFiles(dir)) {
    const own = relative(dir, file).split('/');
    const mine = own.length > 1 ? own[0] : null;
    for (const target of importsOf(file)) {
      const [top, sub] = target.split('/');
      if (top !== 'transport' || sub === undefined || !transports.includes(sub)) continue;
      if (sub !== mine) offenders.push(`${relative(ROOT, file)} imports ${target}`);
    }
  }
  assert.deepEqual(offenders, []);
});

test("transport/'s root is transport-agnostic: no fastify, ws, aedes or sockets", () => {
  const dir = join(ROOT, 'transport');
  const offenders = readdirSync(dir)
    .filter((n) => n.endsWith('.ts'))
    .filter((n) => /(from|import)\s+['"](fastify|ws|aedes|mqtt|@fastify\/[^'"]+|node:(net|dgram|tls|http))['"]/.test(readFileSync(join(dir, n), 'utf8')));
  assert.deepEqual(offenders, []);
});
