/**
 * The import table of ARCHITECTURE.md, checked from the source text (independently of ESLint):
 * which of our folders each folder may import, llm/ and providers/ taking only types from mcp/, the
 * feature rooms (features/<room>/) reached only through their index.ts and only by the rooms the
 * room table allows, no import pointing back up to a parent folder, only server/config.ts reading
 * process.env, session code staying free of Fastify and ws, and each transport in transport/ a
 * folder of its own that shares only transport/'s root.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');
const FOLDERS = [
  'core',
  'protocol',
  'audio',
  'mcp',
  'llm',
  'providers',
  'voice',
  'store',
  'features',
  'transport',
  'server',
  'examples',
] as const;
const ALLOWED: Record<(typeof FOLDERS)[number], readonly string[]> = {
  core: [],
  protocol: ['core'],
  audio: ['core'],
  mcp: ['core'],
  llm: ['core', 'mcp(types)'],
  providers: ['core', 'audio', 'llm', 'mcp(types)'],
  voice: ['core', 'protocol', 'audio', 'mcp', 'llm'],
  store: ['core', 'protocol'],
  features: ['core', 'protocol', 'audio', 'mcp', 'llm', 'providers', 'voice', 'store'],
  transport: ['core', 'protocol', 'voice', 'store', 'features'],
  server: ['core', 'protocol', 'audio', 'mcp', 'llm', 'providers', 'voice', 'store', 'features', 'transport'],
  examples: [],
};

/**
 * The rooms of features/ and the other rooms each may use (through their index.ts only). The
 * graph has no loop: admin is the console over the others, reminders speak through push.
 */
const ROOMS: Record<string, readonly string[]> = {
  admin: ['agents', 'identity', 'mcp-endpoint', 'push', 'vision'],
  agents: [],
  identity: [],
  'mcp-endpoint': [],
  memory: [],
  metrics: [],
  push: [],
  reminders: ['agents', 'push'],
  vision: ['agents'],
};

/** Every relative import of our source folders: the importing file, the specifier, the resolved path from the root, type-only or not. */
function relativeImports(
  folders: readonly string[],
): Array<{ file: string; spec: string; target: string; typeOnly: boolean }> {
  const out: Array<{ file: string; spec: string; target: string; typeOnly: boolean }> = [];
  for (const folder of folders) {
    for (const file of tsFiles(join(ROOT, folder))) {
      for (const m of readFileSync(file, 'utf8').matchAll(IMPORT_RE)) {
        const spec = m[3] ?? m[4] ?? m[5];
        if (!spec || !spec.startsWith('.')) continue;
        out.push({
          file: relative(ROOT, file),
          spec,
          target: relative(ROOT, resolve(dirname(file), spec)),
          typeOnly: m[2] !== undefined,
        });
      }
    }
  }
  return out;
}

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

const IMPORT_RE =
  /^\s*(import|export)\s+(type\s+)?[^'"]*?from\s+['"]([^'"]+)['"]|^\s*import\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/gm;

test('every source folder imports only what ARCHITECTURE.md allows', () => {
  const violations: string[] = [];
  const imports = relativeImports(FOLDERS);
  for (const { file, spec, target: path, typeOnly } of imports) {
    const folder = file.split('/')[0] as (typeof FOLDERS)[number];
    const target = path.split('/')[0] ?? '';
    if (target === folder) continue;
    const ok = ALLOWED[folder].includes(target) || (typeOnly && ALLOWED[folder].includes(`${target}(types)`));
    if (!ok) violations.push(`${file} imports ${spec}${typeOnly ? ' (type)' : ''}`);
  }
  assert.ok(imports.length > 10, 'the scan found imports to check');
  assert.deepEqual(violations, []);
});

test('a feature room is reached only through its index.ts, and only by the rooms the room table allows', () => {
  const violations: string[] = [];
  let crossings = 0;
  for (const { file, spec, target } of relativeImports(FOLDERS)) {
    const [, room, ...rest] = target.split('/');
    if (!target.startsWith('features/') || room === undefined) continue;
    const from = file.startsWith('features/') ? file.split('/')[1] : undefined;
    if (from === room) continue;
    crossings++;
    if (!(room in ROOMS)) violations.push(`${file} imports ${spec}: features/${room}/ is not in the room table`);
    else if (rest.join('/') !== 'index.ts') violations.push(`${file} imports ${spec}: use features/${room}/index.ts`);
    if (from !== undefined && !(ROOMS[from] ?? []).includes(room))
      violations.push(
        `${file} imports ${spec}: features/${from}/ may use ${(ROOMS[from] ?? []).join(', ') || 'no other room'}`,
      );
  }
  const rooms = readdirSync(join(ROOT, 'features')).filter((n) => statSync(join(ROOT, 'features', n)).isDirectory());
  for (const room of rooms) {
    if (!(room in ROOMS)) violations.push(`features/${room}/ is not in the room table`);
    else if (!tsFiles(join(ROOT, 'features', room)).some((f) => f.endsWith(`features/${room}/index.ts`)))
      violations.push(`features/${room}/ has no index.ts`);
  }
  assert.ok(crossings > 10, 'the scan found imports into features/ to check');
  assert.deepEqual(violations, []);
});

test("a room's store code is named after it (store/<room>.ts, store/<room>-*.ts), and no other room reaches into it", () => {
  // The admin API is the console over every room's data: it reads them all.
  const readsAll = new Set(['admin']);
  const ownerOf = (storeFile: string): string | undefined => {
    const name = storeFile.replace(/^store\//, '').replace(/\.ts$/, '');
    return Object.keys(ROOMS).find((room) => name === room || name.startsWith(`${room}-`));
  };
  const violations: string[] = [];
  let checked = 0;
  for (const { file, spec, target } of relativeImports(['features'])) {
    if (!target.startsWith('store/')) continue;
    checked++;
    const room = file.split('/')[1] ?? '';
    const owner = ownerOf(target);
    if (owner !== undefined && owner !== room && !readsAll.has(room))
      violations.push(`${file} imports ${spec}, features/${owner}/'s store code`);
  }
  const owned = tsFiles(join(ROOT, 'store')).filter((f) => ownerOf(relative(ROOT, f)) !== undefined);
  assert.ok(checked > 5 && owned.length > 5, 'the scan found store imports and room-named store files');
  assert.deepEqual(violations, []);
});

/** Every folder of the server's source, top level and below (the examples stand apart). */
const ALL_SOURCE = FOLDERS.filter((f) => f !== 'examples');

test('no import points back up to a file of a parent folder', () => {
  const violations = relativeImports(ALL_SOURCE)
    .filter(({ file, target }) => {
      const from = dirname(file);
      const to = dirname(target);
      return from !== to && from.startsWith(`${to}/`);
    })
    .map(({ file, spec }) => `${file} imports ${spec}`);
  assert.deepEqual(violations, []);
});

test('no folder imports, directly or through others, a folder that imports it', () => {
  const edges = new Map<string, Set<string>>();
  for (const { file, target } of relativeImports(ALL_SOURCE)) {
    const from = dirname(file);
    const to = dirname(target);
    if (from === to) continue;
    if (!edges.has(from)) edges.set(from, new Set());
    edges.get(from)?.add(to);
  }
  assert.ok(edges.size > 20, 'the scan found folders importing each other');
  // Depth-first search; a folder met again while still on the path closes a loop.
  const loops: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const visit = (folder: string, path: string[]): void => {
    state.set(folder, 'open');
    for (const next of edges.get(folder) ?? []) {
      if (state.get(next) === 'open') loops.push([...path.slice(path.indexOf(next)), folder, next].join(' -> '));
      else if (!state.has(next)) visit(next, [...path, folder]);
    }
    state.set(folder, 'done');
  };
  for (const folder of edges.keys()) if (!state.has(folder)) visit(folder, []);
  assert.deepEqual(loops, []);
});

test('only server/config.ts reads process.env', () => {
  const offenders: string[] = [];
  for (const folder of ALL_SOURCE) {
    for (const file of tsFiles(join(ROOT, folder))) {
      const rel = relative(ROOT, file);
      if (rel === 'server/config.ts') continue;
      // Writes onnxruntime's telemetry opt-out, the one variable that library reads; reads no configuration.
      if (rel === 'audio/vad/onnx-telemetry.ts') continue;
      if (/process\.env/.test(readFileSync(file, 'utf8').replace(/\/\/.*$|\/\*[\s\S]*?\*\//gm, '')))
        offenders.push(rel);
    }
  }
  assert.deepEqual(offenders, []);
});

test('voice/ does not import fastify or ws', () => {
  const offenders = tsFiles(join(ROOT, 'voice')).filter((f) =>
    /from\s+['"](fastify|ws|@fastify\/[^'"]+)['"]/.test(readFileSync(f, 'utf8')),
  );
  assert.deepEqual(
    offenders.map((f) => relative(ROOT, f)),
    [],
  );
});

/** transport/'s folder of what every transport shares: the contract and the session door. */
const SHARED_TRANSPORT = 'session-door';

test('transport/: each transport is one folder that imports no other, only the shared session-door/; session-door/ imports none of them', () => {
  const dir = join(ROOT, 'transport');
  const folders = readdirSync(dir).filter((n) => statSync(join(dir, n)).isDirectory());
  const transports = folders.filter((n) => n !== SHARED_TRANSPORT);
  assert.ok(
    folders.includes(SHARED_TRANSPORT) && transports.includes('ws') && transports.includes('mqtt'),
    `the folders found: ${folders.join(', ')}`,
  );
  const loose = readdirSync(dir).filter((n) => !folders.includes(n));
  assert.deepEqual(loose, [], 'transport/ holds folders only: a transport each, and session-door/');
  const offenders: string[] = [];
  for (const { file, target } of relativeImports(['transport'])) {
    const mine = file.split('/')[1];
    const [top, sub] = target.split('/');
    if (top !== 'transport' || sub === undefined || sub === mine || sub === SHARED_TRANSPORT) continue;
    offenders.push(`${file} imports ${target}`);
  }
  assert.deepEqual(offenders, []);
});

test('a transport, and session-door/, is reached only through its index.ts from outside its folder', () => {
  const violations: string[] = [];
  let crossings = 0;
  for (const { file, spec, target } of relativeImports(FOLDERS)) {
    const [top, folder, ...rest] = target.split('/');
    if (top !== 'transport' || folder === undefined || file.startsWith(`transport/${folder}/`)) continue;
    crossings++;
    if (rest.join('/') !== 'index.ts') violations.push(`${file} imports ${spec}: use transport/${folder}/index.ts`);
  }
  assert.ok(crossings > 5, 'the scan found imports into transport/ to check');
  assert.deepEqual(violations, []);
});

test('transport/session-door/ is transport-agnostic: no fastify, ws, aedes or sockets', () => {
  const offenders = tsFiles(join(ROOT, 'transport', SHARED_TRANSPORT))
    .filter((f) =>
      /(from|import)\s+['"](fastify|ws|aedes|mqtt|@fastify\/[^'"]+|node:(net|dgram|tls|http))['"]/.test(
        readFileSync(f, 'utf8'),
      ),
    )
    .map((f) => relative(ROOT, f));
  assert.deepEqual(offenders, []);
});
