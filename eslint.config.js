// ESLint flat config. Besides the usual TypeScript rules it enforces the import table of
// ARCHITECTURE.md: each source folder lists the sibling folders it must not reach into.
// test/boundaries.test.ts checks the same table independently of the linter.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const folders = ['core', 'protocol', 'audio', 'mcp', 'llm', 'providers', 'voice', 'store', 'transport', 'server', 'web', 'test', 'examples', 'scripts'];

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
  transport: ['core', 'protocol', 'voice', 'store'],
  server: ['core', 'protocol', 'audio', 'mcp', 'llm', 'providers', 'voice', 'store', 'transport'],
  examples: [],
};

/** Import paths of the folders `folder` must not reach into. */
function boundaryGroups(folder) {
  const forbidden = folders.filter((f) => f !== folder && !allowed[folder].includes(f));
  return forbidden.flatMap((f) => [`../${f}/*`, `../../${f}/*`, `../../../${f}/*`, `../${f}`, `../../${f}`]);
}

function boundaryRule(folder) {
  const patterns = [
    {
      group: boundaryGroups(folder),
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
  return { files: [`${folder}/**/*.ts`], rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns }] } };
}

/**
 * transport/ holds one folder per transport, sharing only the root (the contract and what every
 * transport uses): a transport does not reach into another, and the root into none of them.
 */
const transports = readdirSync(join(import.meta.dirname, 'transport'), { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name);

function transportRules() {
  const outside = { group: boundaryGroups('transport'), message: `ARCHITECTURE.md: transport/ may import only ${allowed.transport.join(', ')}.` };
  const root = { files: ['transport/*.ts'], rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns: [outside, { group: transports.map((t) => `./${t}/*`), message: "ARCHITECTURE.md: transport/'s root imports no transport." }] }] } };
  const each = transports.map((t) => {
    const others = transports.filter((o) => o !== t).map((o) => `../${o}/*`);
    const sibling = { group: others, message: 'ARCHITECTURE.md: a transport imports transport/ (the root), never another transport.' };
    return { files: [`transport/${t}/**/*.ts`], rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns: others.length > 0 ? [outside, sibling] : [outside] }] } };
  });
  return [root, ...each];
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
        { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'it', 'describe', 'suite', 'before', 'after', 'beforeEach', 'afterEach'] }] },
      ],
    },
  },
  ...Object.keys(allowed)
    .filter((f) => f !== 'transport')
    .map(boundaryRule),
  ...transportRules(),
  {
    // Only server/config.ts reads the environment.
    files: ['core/**/*.ts', 'protocol/**/*.ts', 'audio/**/*.ts', 'mcp/**/*.ts', 'llm/**/*.ts', 'providers/**/*.ts', 'voice/**/*.ts', 'store/**/*.ts', 'transport/**/*.ts', 'server/**/*.ts'],
    ignores: ['server/config.ts'],
    rules: {
      'no-restricted-properties': ['error', { object: 'process', property: 'env', message: 'Only server/config.ts reads process.env.' }],
    },
  },
  {
    files: ['test/**/*.{ts,mjs}', 'examples/**/*.ts', 'server/main.ts', 'web/**/*.js', '*.js', '.ci/**'],
    rules: { 'no-console': 'off' },
  },
  {
    files: ['web/**/*.js'],
    languageOptions: { globals: { window: 'readonly', document: 'readonly', navigator: 'readonly', console: 'readonly', fetch: 'readonly', WebSocket: 'readonly', AudioContext: 'readonly', AudioEncoder: 'readonly', AudioDecoder: 'readonly', AudioData: 'readonly', EncodedAudioChunk: 'readonly', location: 'readonly', performance: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', URL: 'readonly', URLSearchParams: 'readonly', crypto: 'readonly', localStorage: 'readonly', TextEncoder: 'readonly', TextDecoder: 'readonly', AudioWorkletNode: 'readonly', MediaStream: 'readonly', Blob: 'readonly', AbortController: 'readonly' } },
  },
  {
    files: ['test/**/*.mjs', '*.js'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly' } },
  },
);
