// ESLint flat config. Besides the usual TypeScript rules it enforces the import table of
// ARCHITECTURE.md: each source folder lists the sibling folders it must not reach into, and the
// feature rooms (features/<room>/) are reached only through their index.ts, by the rooms the room
// table allows; in transport/ no transport imports another. test/unit/boundaries.test.ts checks
// the same tables independently of the linter.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const folders = [
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
  'web',
  'test',
  'examples',
  'scripts',
];

/** Folder -> folders it may import (besides itself). `llm` and `providers` may import `mcp` for types only. */
const allowed = {
  core: [],
  protocol: ['core'],
  audio: ['core'],
  mcp: ['core'],
  llm: ['core'],
  providers: ['core', 'audio', 'llm'],
  voice: ['core', 'protocol', 'audio', 'mcp', 'llm'],
  store: ['core', 'protocol'],
  features: ['core', 'protocol', 'audio', 'mcp', 'llm', 'providers', 'voice', 'store'],
  transport: ['core', 'protocol', 'voice', 'store', 'features'],
  server: ['core', 'protocol', 'audio', 'mcp', 'llm', 'providers', 'voice', 'store', 'features', 'transport'],
  examples: [],
};

/** Room of features/ -> the other rooms it may use, through their index.ts only (no loops). */
const rooms = {
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

/** A room's files other than its index.ts, seen from outside features/. */
const ROOM_INTERNALS = String.raw`^(\.\./)+features/[^/]+/(?!index\.ts$)`;
/** A transport's files (or session-door's) other than its index.ts, seen from outside transport/. */
const TRANSPORT_INTERNALS = String.raw`^(\.\./)+transport/[^/]+/(?!index\.ts$)`;
/** Another room's files other than its index.ts, seen from a room (features/<room>/file.ts). */
const OTHER_ROOM_INTERNALS = String.raw`^\.\./[^./][^/]*/(?!index\.ts$)`;

function boundaryRule(folder) {
  const forbidden = folders.filter((f) => f !== folder && !allowed[folder].includes(f));
  const patterns = [
    {
      group: forbidden.flatMap((f) => [`../${f}/*`, `../../${f}/*`, `../../../${f}/*`, `../${f}`, `../../${f}`]),
      message: `ARCHITECTURE.md: ${folder}/ may import only ${allowed[folder].join(', ') || 'nothing of ours'}.`,
    },
  ];
  if (folder === 'llm' || folder === 'providers') {
    patterns.push({
      group: ['../mcp/*', '../../mcp/*', '../../../mcp/*'],
      allowTypeImports: true,
      message: `ARCHITECTURE.md: ${folder}/ may import mcp/ types only (use \`import type\`).`,
    });
  }
  if (allowed[folder].includes('features')) {
    patterns.push({
      regex: ROOM_INTERNALS,
      message: `ARCHITECTURE.md: ${folder}/ imports a feature room only through its index.ts.`,
    });
  }
  if (allowed[folder].includes('transport')) {
    patterns.push({
      regex: TRANSPORT_INTERNALS,
      message: `ARCHITECTURE.md: ${folder}/ imports a transport (and session-door/) only through its index.ts.`,
    });
  }
  return {
    files: [`${folder}/**/*.ts`],
    rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns }] },
  };
}

/** A room's files: the folder rule, plus other rooms only as the room table allows, through index.ts. */
function roomRule(room) {
  const folderRule = boundaryRule('features').rules['@typescript-eslint/no-restricted-imports'][1].patterns;
  const others = Object.keys(rooms).filter((r) => r !== room);
  const patterns = [
    ...folderRule,
    { regex: OTHER_ROOM_INTERNALS, message: `ARCHITECTURE.md: a room imports another room only through its index.ts.` },
    ...(others.some((r) => !rooms[room].includes(r))
      ? [
          {
            group: others.filter((r) => !rooms[room].includes(r)).map((r) => `../${r}/*`),
            message: `ARCHITECTURE.md: features/${room}/ may use ${rooms[room].join(', ') || 'no other room'}.`,
          },
        ]
      : []),
  ];
  return {
    files: [`features/${room}/**/*.ts`],
    rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns }] },
  };
}

/**
 * transport/ holds one folder per transport and `session-door/`, what they all share (the contract
 * and the door sessions open through): a transport does not reach into another, and the shared
 * folder into none of them.
 */
const SHARED_TRANSPORT = 'session-door';
const transports = readdirSync(join(import.meta.dirname, 'transport'), { withFileTypes: true })
  .filter((d) => d.isDirectory() && d.name !== SHARED_TRANSPORT)
  .map((d) => d.name);

function transportRules() {
  const folderRule = [
    ...boundaryRule('transport').rules['@typescript-eslint/no-restricted-imports'][1].patterns,
    {
      regex: String.raw`^\.\./${SHARED_TRANSPORT}/(?!index\.ts$)`,
      message: `ARCHITECTURE.md: a transport imports transport/${SHARED_TRANSPORT}/ only through its index.ts.`,
    },
  ];
  const rule = (files, group, message) => ({
    files,
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        { patterns: group.length > 0 ? [...folderRule, { group, message }] : folderRule },
      ],
    },
  });
  return [
    rule(
      [`transport/${SHARED_TRANSPORT}/**/*.ts`],
      transports.map((t) => `../${t}/*`),
      `ARCHITECTURE.md: transport/${SHARED_TRANSPORT}/ imports no transport.`,
    ),
    ...transports.map((t) =>
      rule(
        [`transport/${t}/**/*.ts`],
        transports.filter((o) => o !== t).map((o) => `../${o}/*`),
        `ARCHITECTURE.md: a transport imports transport/${SHARED_TRANSPORT}/, never another transport.`,
      ),
    ),
  ];
}

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', 'test/output/**', 'web/**/vendor/**', 'scratch/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { ecmaVersion: 2023, sourceType: 'module' },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'error',
    },
  },
  {
    // A promise nobody awaits loses its rejection (an unhandled rejection ends the process) and its
    // timing. Type-checked, so it runs with the TypeScript project. node:test's test()/describe()
    // return promises the runner itself tracks.
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            {
              from: 'package',
              package: 'node:test',
              name: ['test', 'it', 'describe', 'suite', 'before', 'after', 'beforeEach', 'afterEach'],
            },
          ],
        },
      ],
    },
  },
  ...Object.keys(allowed)
    .filter((f) => f !== 'transport')
    .map(boundaryRule),
  ...Object.keys(rooms).map(roomRule),
  ...transportRules(),
  {
    // Only server/config.ts reads the environment.
    files: [
      'core/**/*.ts',
      'protocol/**/*.ts',
      'audio/**/*.ts',
      'mcp/**/*.ts',
      'llm/**/*.ts',
      'providers/**/*.ts',
      'voice/**/*.ts',
      'store/**/*.ts',
      'features/**/*.ts',
      'transport/**/*.ts',
      'server/**/*.ts',
    ],
    ignores: ['server/config.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        { object: 'process', property: 'env', message: 'Only server/config.ts reads process.env.' },
      ],
    },
  },
  {
    files: ['test/**/*.{ts,mjs}', 'examples/**/*.ts', 'server/main.ts', 'web/**/*.js', '*.js', '.ci/**'],
    rules: { 'no-console': 'off' },
  },
  {
    files: ['web/**/*.js'],
    languageOptions: {
      globals: {
        window: 'readonly',
        document: 'readonly',
        navigator: 'readonly',
        console: 'readonly',
        fetch: 'readonly',
        WebSocket: 'readonly',
        AudioContext: 'readonly',
        AudioEncoder: 'readonly',
        AudioDecoder: 'readonly',
        AudioData: 'readonly',
        EncodedAudioChunk: 'readonly',
        location: 'readonly',
        performance: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        URL: 'readonly',
        URLSearchParams: 'readonly',
        crypto: 'readonly',
        localStorage: 'readonly',
        TextEncoder: 'readonly',
        TextDecoder: 'readonly',
        AudioWorkletNode: 'readonly',
        MediaStream: 'readonly',
        Blob: 'readonly',
        AbortController: 'readonly',
      },
    },
  },
  {
    files: ['test/**/*.mjs', '*.js'],
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly' },
    },
  },
);
