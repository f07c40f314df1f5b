/**
 * The deployment files agree with each other and with the code (no Docker engine here, so this is
 * what can be checked without one; .ci/container-smoke.sh builds and runs the image for real):
 * the compose config is a valid server config pointing at the compose MCP service, the compose
 * commands run files the build emits, and the build context lets every compiled folder through.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { loadConfig } from '../../../server/config.ts';

interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile: string };
  command?: string[];
  ports?: string[];
  volumes?: string[];
  profiles?: string[];
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
}

const compose = parse(readFileSync('docker/compose.yml', 'utf8')) as { services: Record<string, ComposeService>; volumes: Record<string, unknown> };
const services = compose.services;

describe('deployment files', () => {
  test('docker/server.yaml is a valid configuration whose MCP server is the compose mcp-audio service', () => {
    const { config } = loadConfig({ argv: ['--config', 'docker/server.yaml'], env: {}, cwd: process.cwd() });
    const music = config.mcpServers.music;
    assert.ok(music && 'url' in music, 'music is an HTTP MCP server');
    const url = new URL(music.url);
    assert.equal(url.hostname, 'mcp-audio');
    const cmd = services['mcp-audio']?.command ?? [];
    assert.equal(cmd[cmd.indexOf('--port') + 1], url.port, 'the port the service listens on');
    assert.equal(cmd[cmd.indexOf('--host') + 1], '0.0.0.0', 'reachable from the server container');
    assert.equal(new URL(config.llm.baseURL).hostname, 'ollama', 'the default LLM is the ollama profile service');
    assert.equal(config.server.port, 8000);
  });

  test('compose: services, profile, mounts, health checks and the files they run', () => {
    const server = services.server;
    assert.ok(server);
    assert.deepEqual(server.build, { context: '..', dockerfile: 'Dockerfile' });
    assert.ok(existsSync('Dockerfile'));
    assert.ok(server.volumes?.includes('./server.yaml:/app/config.yaml:ro'));
    assert.ok(server.ports?.some((p) => p.endsWith(':8000')));
    assert.match(server.healthcheck?.test.join(' ') ?? '', /\/healthz/);
    assert.equal(server.depends_on?.['mcp-audio']?.condition, 'service_healthy');
    // The compose service runs compiled JS from the same image: its source must exist.
    const entry = services['mcp-audio']?.command?.[1] ?? '';
    assert.match(entry, /^dist\/examples\/.+\.js$/);
    assert.ok(existsSync(entry.replace(/^dist\//, '').replace(/\.js$/, '.ts')), `${entry} is built from an existing source`);
    assert.equal(services['mcp-audio']?.ports, undefined, 'the unauthenticated MCP server is not published');
    assert.deepEqual(services.ollama?.profiles, ['ollama']);
    assert.deepEqual(services['ollama-pull']?.profiles, ['ollama']);
    assert.ok('ollama' in compose.volumes, 'models persist in a named volume');
  });

  test('Dockerfile: official base, runs compiled JS as a non-root user, health check, signals reach Node', () => {
    const df = readFileSync('Dockerfile', 'utf8');
    assert.match(df, /^ARG NODE_IMAGE=node:22-bookworm-slim$/m);
    assert.match(df, /^FROM \$\{NODE_IMAGE\} AS runtime$/m);
    assert.match(df, /^USER node$/m);
    assert.match(df, /^HEALTHCHECK .*$/m);
    assert.match(df, /^ENTRYPOINT \["\/usr\/bin\/tini", "--"\]$/m);
    assert.match(df, /^CMD \["node", "dist\/server\/main\.js"\]$/m);
    assert.match(df, /npm_config_nodedir=\/usr\/local/);
  });

  test('.dockerignore lets through every folder the build compiles, and no secrets', () => {
    const build = JSON.parse(readFileSync('tsconfig.build.json', 'utf8')) as { include: string[] };
    const lines = readFileSync('.dockerignore', 'utf8').split('\n').map((l) => l.trim());
    assert.equal(lines.find((l) => l && !l.startsWith('#')), '*', 'a whitelist: everything is excluded first');
    for (const dir of build.include) assert.ok(lines.includes(`!${dir}/`), `${dir}/ reaches the build`);
    for (const f of ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json']) assert.ok(lines.includes(`!${f}`), f);
    assert.ok(!lines.includes('!config.yaml') && !lines.includes('!.env'));
  });
});
