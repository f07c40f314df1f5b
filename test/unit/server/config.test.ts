import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ConfigError, loadConfig } from '../../../server/config.ts';
import { storeLocation } from '../../../server/open-store.ts';

const made: string[] = [];
after(() => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
});

function tmpDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cfg-'));
  made.push(dir);
  return dir;
}

function tmpFile(text: string): { dir: string; file: string } {
  const dir = tmpDir();
  const file = join(dir, 'c.yaml');
  writeFileSync(file, text);
  return { dir, file };
}

describe('config', () => {
  test('a config file holding a secret that others can read gives a warning naming the file and chmod 600', {
    skip: process.platform === 'win32' ? 'no POSIX modes' : false,
  }, () => {
    const open = tmpFile('llm: { apiKey: sk-in-a-file-0123 }');
    chmodSync(open.file, 0o644);
    const warned = loadConfig({ argv: ['--config', open.file], env: {}, cwd: open.dir }).warnings;
    assert.equal(warned.length, 1, String(warned));
    assert.ok(warned[0]?.includes(open.file), warned[0]);
    assert.match(warned[0] ?? '', /chmod 600/);
    assert.match(warned[0] ?? '', /llm\.apiKey/);
    assert.ok(!warned[0]?.includes('sk-in-a-file-0123'), 'the value is not repeated');
    chmodSync(open.file, 0o640);
    assert.equal(
      loadConfig({ argv: ['--config', open.file], env: {}, cwd: open.dir }).warnings.length,
      1,
      'group-readable counts too',
    );
    chmodSync(open.file, 0o600);
    assert.deepEqual(loadConfig({ argv: ['--config', open.file], env: {}, cwd: open.dir }).warnings, []);
    const plain = tmpFile('llm: { model: m, apiKey: "" }\nserver: { port: 1 }');
    chmodSync(plain.file, 0o644);
    assert.deepEqual(
      loadConfig({ argv: ['--config', plain.file], env: {}, cwd: plain.dir }).warnings,
      [],
      'no secret in the file: no warning',
    );
    const fromEnv = loadConfig({
      argv: ['--config', plain.file],
      env: { OPENAI_API_KEY: 'sk-from-env-0123' },
      cwd: plain.dir,
    });
    assert.deepEqual(fromEnv.warnings, [], 'a secret from the environment is not in the file');
  });

  test('embedded defaults when no file exists', () => {
    const dir = tmpDir();
    const { config, file } = loadConfig({ argv: [], env: {}, cwd: dir });
    assert.equal(file, null);
    assert.equal(config.server.port, 8000);
    assert.equal(config.server.host, '0.0.0.0');
    assert.equal(config.server.protocolVersion, 1);
    assert.deepEqual(config.server.auth, {
      tokens: [],
      allowedDevices: [],
      secret: '',
      codeTtlS: 600,
      pendingPerAddress: 3,
      bindCommand: 'npm run devices -- bind {code}',
    });
    assert.equal(config.server.dataDir, 'data');
    assert.equal(config.server.helloTimeoutMs, 10000);
    assert.equal(config.server.idleTimeoutMs, 120000);
    assert.equal(config.audio.outputSampleRate, 24000);
    assert.deepEqual(
      { p: config.vad.provider, t: config.vad.threshold, s: config.vad.minSilenceMs },
      { p: 'silero', t: 0.5, s: 700 },
    );
    assert.equal(config.asr.provider, 'pocketsphinx');
    assert.equal(config.tts.provider, 'espeak');
    assert.equal(config.llm.baseURL, 'http://127.0.0.1:11434/v1');
    assert.equal(config.llm.maxToolRounds, 5);
    assert.deepEqual(config.mcpServers, {});
  });

  test('file order: --config, then XIAOZHI_CONFIG, then ./config.yaml', () => {
    const a = tmpFile('server: { port: 9001 }');
    const b = tmpFile('server: { port: 9002 }');
    writeFileSync(join(a.dir, 'config.yaml'), 'server: { port: 9003 }');
    assert.equal(
      loadConfig({ argv: ['--config', b.file], env: { XIAOZHI_CONFIG: a.file }, cwd: a.dir }).config.server.port,
      9002,
    );
    assert.equal(loadConfig({ argv: [`--config=${b.file}`], env: {}, cwd: a.dir }).config.server.port, 9002);
    assert.equal(loadConfig({ argv: [], env: { XIAOZHI_CONFIG: a.file }, cwd: b.dir }).config.server.port, 9001);
    assert.equal(loadConfig({ argv: [], env: {}, cwd: a.dir }).config.server.port, 9003);
  });

  test('environment overrides', () => {
    const a = tmpFile('llm: { model: from-file }\nserver: { port: 1 }');
    const { config, overrides } = loadConfig({
      argv: ['--config', a.file],
      env: { PORT: '8123', OPENAI_BASE_URL: 'http://10.0.0.1:8000/v1', OPENAI_API_KEY: 'sk-x', LLM_MODEL: 'gpt-x' },
      cwd: a.dir,
    });
    assert.equal(config.server.port, 8123);
    assert.equal(config.llm.baseURL, 'http://10.0.0.1:8000/v1');
    assert.equal(config.llm.apiKey, 'sk-x');
    assert.equal(config.llm.model, 'gpt-x');
    assert.deepEqual(overrides.sort(), ['LLM_MODEL', 'OPENAI_API_KEY', 'OPENAI_BASE_URL', 'PORT']);
  });

  test('one data directory: server.dataDir, XIAOZHI_DATA_DIR over the file, the SQLite database inside it', () => {
    const a = tmpFile('server: { dataDir: /from-file }');
    assert.equal(
      storeLocation(loadConfig({ argv: ['--config', a.file], env: {}, cwd: a.dir }).config),
      'sqlite:/from-file/xiaozhi.db',
    );
    const { config, overrides } = loadConfig({
      argv: ['--config', a.file],
      env: { XIAOZHI_DATA_DIR: '/data' },
      cwd: a.dir,
    });
    assert.equal(config.server.dataDir, '/data');
    assert.deepEqual(overrides, ['XIAOZHI_DATA_DIR']);
    assert.equal(storeLocation(config), 'sqlite:/data/xiaozhi.db');
    assert.equal(
      storeLocation(loadConfig({ argv: [], env: {}, cwd: tmpDir() }).config),
      `sqlite:${resolve('data', 'xiaozhi.db')}`,
    );
  });

  test('store.url: sqlite:PATH by default; DATABASE_URL overrides it; the password never appears in its location', () => {
    const a = tmpFile('store: { url: "sqlite:other.db" }');
    assert.equal(loadConfig({ argv: ['--config', a.file], env: {}, cwd: a.dir }).config.store.url, 'sqlite:other.db');
    const { config, overrides } = loadConfig({
      argv: ['--config', a.file],
      env: { DATABASE_URL: 'postgres://app:hunter2@db:5432/xiaozhi' },
      cwd: a.dir,
    });
    assert.equal(config.store.url, 'postgres://app:hunter2@db:5432/xiaozhi');
    assert.deepEqual(overrides, ['DATABASE_URL']);
    assert.equal(storeLocation(config), 'postgres://[Redacted]@db:5432/xiaozhi');
    assert.throws(() => loadConfig({ argv: [], env: { DATABASE_URL: 'mysql://x' }, cwd: tmpDir() }), /store\.url/);
  });

  test('invalid values name the key and the problem', () => {
    const cases: Array<[string, RegExp]> = [
      ['server: { port: "eighty" }', /server\.port/],
      ['server: { protocolVersion: 4 }', /server\.protocolVersion/],
      ['vad: { provider: magic }', /vad\.provider/],
      ['vad: { threshold: 7 }', /vad\.threshold/],
      ['tts: { provider: openai }', /tts\.baseURL/],
      ['llm: { baseURL: not-a-url }', /llm\.baseURL/],
      ['serverr: { port: 1 }', /serverr|Unrecognized key/],
      ['mcpServers: { weather: { args: [x] } }', /mcpServers\.weather/],
      ['server: { firmware: { version: "v2" } }', /server\.firmware\.version/],
    ];
    for (const [text, re] of cases) {
      const f = tmpFile(text);
      assert.throws(
        () => loadConfig({ argv: ['--config', f.file], env: {}, cwd: f.dir }),
        (err: unknown) => {
          assert.ok(err instanceof ConfigError, String(err));
          assert.match(err.message, re, text);
          return true;
        },
      );
    }
  });

  test('broken YAML and a missing file are ConfigErrors', () => {
    const f = tmpFile('server: { port: 1\n  host: [');
    assert.throws(() => loadConfig({ argv: ['--config', f.file], env: {}, cwd: f.dir }), /not valid YAML/);
    assert.throws(
      () => loadConfig({ argv: ['--config', join(f.dir, 'missing.yaml')], env: {}, cwd: f.dir }),
      /cannot read config file/,
    );
    const list = tmpFile('- a\n- b');
    assert.throws(() => loadConfig({ argv: ['--config', list.file], env: {}, cwd: list.dir }), /mapping/);
  });
});
