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
  pull_policy?: string;
  entrypoint?: string[];
  environment?: Record<string, string>;
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
}

const compose = parse(readFileSync('docker/compose.yml', 'utf8')) as {
  services: Record<string, ComposeService>;
  volumes: Record<string, unknown>;
};
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
    assert.equal(new URL(config.llm.baseURL).hostname, 'ollama', 'the default LLM is the ollama service');
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
    assert.ok(
      existsSync(entry.replace(/^dist\//, '').replace(/\.js$/, '.ts')),
      `${entry} is built from an existing source`,
    );
    assert.equal(services['mcp-audio']?.ports, undefined, 'the unauthenticated MCP server is not published');
    assert.ok('ollama' in compose.volumes, 'models persist in a named volume');
  });

  test('compose: `docker compose up` alone gives a talking stack (Ollama and its model in the default stack, the server waits for them)', () => {
    const server = services.server;
    for (const name of ['ollama', 'ollama-pull'])
      assert.equal(services[name]?.profiles, undefined, `${name} is in the default stack`);
    assert.equal(server?.depends_on?.ollama?.condition, 'service_healthy');
    assert.equal(
      server?.depends_on?.['ollama-pull']?.condition,
      'service_completed_successfully',
      'no turn before the model is there',
    );
    // Every dependency exists, and every service_healthy one has a health check to become healthy.
    for (const [name, svc] of Object.entries(services)) {
      for (const [dep, { condition }] of Object.entries(svc.depends_on ?? {})) {
        assert.ok(services[dep], `${name} depends on a defined service ${dep}`);
        if (condition === 'service_healthy')
          assert.ok(services[dep]?.healthcheck?.test.length, `${dep} has a health check`);
      }
    }
    // The model pulled is the model the server asks for; a cloud LLM (OPENAI_BASE_URL in .env) skips the pull.
    const { config } = loadConfig({ argv: ['--config', 'docker/server.yaml'], env: {}, cwd: process.cwd() });
    const pull = services['ollama-pull'];
    const script = pull?.entrypoint?.join(' ') ?? '';
    assert.ok(
      script.includes(`\${OLLAMA_MODEL:-${config.llm.model}}`) ||
        pull?.environment?.OLLAMA_MODEL === `\${OLLAMA_MODEL:-${config.llm.model}}`,
      script,
    );
    assert.match(script, /OPENAI_BASE_URL/);
    assert.match(readFileSync('docker/.env.example', 'utf8'), /^# OPENAI_BASE_URL=/m);
  });

  test('compose: mcp-audio uses the image the server service builds, never pulled; the minimum Compose version is stated', () => {
    assert.equal(services['mcp-audio']?.image, services.server?.image);
    assert.equal(services['mcp-audio']?.pull_policy, 'never');
    assert.match(readFileSync('docker/compose.yml', 'utf8'), /Docker Compose 2\.24 or newer/);
    assert.match(readFileSync('docs/deployment.md', 'utf8'), /Docker Compose 2\.24 or newer/);
  });

  test('Dockerfile: official base, runs compiled JS as a non-root user, health check, signals reach Node', () => {
    const df = readFileSync('Dockerfile', 'utf8');
    // The supported line, the one engines names (test/integration/ops/node-line.test.ts).
    assert.match(df, /^ARG NODE_IMAGE=node:24-bookworm-slim$/m);
    // The image runs on its base's Node: the registry's Node package that npm ci installed for the
    // scripts stays out of the runtime's node_modules.
    assert.match(df, /rm -rf node_modules\/node-linux-\* node_modules\/\.bin\/node/);
    assert.match(df, /^FROM \$\{NODE_IMAGE\} AS runtime$/m);
    assert.match(df, /^USER node$/m);
    assert.match(df, /^HEALTHCHECK .*$/m);
    assert.match(df, /^ENTRYPOINT \["\/usr\/bin\/tini", "--"\]$/m);
    assert.match(df, /^CMD \["node", "--max-semi-space-size=16", "dist\/server\/main\.js"\]$/m);
    assert.match(df, /npm_config_nodedir=\/usr\/local/);
  });

  test('Dockerfile: the bind command the image names is the one it installs, in the compose service it runs as', () => {
    const df = readFileSync('Dockerfile', 'utf8');
    const command = /XIAOZHI_BIND_COMMAND="([^"]+)"/.exec(df)?.[1] ?? '';
    assert.match(command, /^devices bind \{code\}/, 'inside the container the wrapper on PATH');
    assert.match(df, /> \/usr\/local\/bin\/devices/, 'the wrapper is installed');
    const compose = /docker compose exec (\S+) devices bind \{code\}/.exec(command)?.[1];
    assert.ok(compose && services[compose]?.build, `the compose form names the server's service: ${command}`);
  });

  test('Dockerfile: the image can be extended with apt (nothing force-removed; apt-get check in the build; a derived image in the smoke)', () => {
    const df = readFileSync('Dockerfile', 'utf8');
    assert.doesNotMatch(df, /--force-depends|dpkg --purge|dpkg -P\b/);
    assert.match(df, /&& apt-get check \\/);
    assert.match(df, /\/etc\/dpkg\/dpkg\.cfg\.d\/xiaozhi-slim/, 'slimmed by dpkg path-exclude instead');
    const smoke = readFileSync('.ci/container-smoke.sh', 'utf8');
    assert.match(smoke, /FROM \$IMAGE[\s\S]*apt-get install -y/);
  });

  test("one data directory: the image's /data (node's, a volume, XIAOZHI_DATA_DIR) is compose's named volume; devices on PATH", () => {
    const dockerfile = readFileSync('Dockerfile', 'utf8');
    assert.match(dockerfile, /mkdir \/data && chown node:node \/data/, 'the user the server runs as owns /data');
    assert.match(dockerfile, /^VOLUME \/data$/m);
    assert.match(dockerfile, /XIAOZHI_DATA_DIR=\/data/);
    assert.match(dockerfile, /exec node \/app\/dist\/scripts\/devices\.js/, 'the devices CLI runs the compiled script');
    const build = JSON.parse(readFileSync('tsconfig.build.json', 'utf8')) as { include: string[] };
    assert.ok(build.include.includes('scripts'), 'the build compiles scripts/devices.ts');
    const { config } = loadConfig({
      argv: ['--config', 'docker/server.yaml'],
      env: { XIAOZHI_DATA_DIR: '/data' },
      cwd: process.cwd(),
    });
    assert.equal(config.server.dataDir, '/data', 'docker/server.yaml leaves the data directory to the image');
    assert.ok((services.server?.volumes ?? []).includes('data:/data'), 'compose mounts the named volume at /data');
    assert.ok('data' in compose.volumes, 'compose declares the data volume');
  });

  test('compose.replicas.yml: two replicas of one image on one PostgreSQL, behind a proxy that passes WebSocket upgrades', () => {
    const rep = parse(readFileSync('docker/compose.replicas.yml', 'utf8'), { merge: true }) as {
      services: Record<string, ComposeService & { image?: string }>;
      volumes: Record<string, unknown>;
    };
    const a = rep.services['server-a'];
    const b = rep.services['server-b'];
    assert.ok(a && b, 'two server services');
    assert.equal(a.image, b.image, 'the same image');
    assert.equal(b.pull_policy, 'never', 'the second uses the image the first builds');
    for (const srv of [a, b]) {
      const url = new URL((srv.environment?.DATABASE_URL ?? '').replace(/\$\{[^}]*\}/, 'pw'));
      assert.equal(url.protocol, 'postgres:');
      assert.equal(url.hostname, 'postgres', 'the compose PostgreSQL service');
      assert.equal(srv.depends_on?.postgres?.condition, 'service_healthy');
      assert.equal(srv.ports, undefined, 'only the proxy is published');
      assert.ok(srv.volumes?.includes('./replicas/server.yaml:/app/config.yaml:ro'));
    }
    assert.ok(
      rep.services.postgres?.volumes?.some((v) => v.startsWith('pgdata:')),
      'the database on a volume',
    );
    assert.ok('pgdata' in rep.volumes);
    const nginx = readFileSync('docker/replicas/nginx.conf', 'utf8');
    assert.match(nginx, /server server-a:8000;[\s\S]*server server-b:8000;/);
    assert.match(nginx, /proxy_http_version 1\.1;/);
    assert.match(nginx, /proxy_set_header Upgrade \$http_upgrade;/);
    assert.match(nginx, /proxy_set_header X-Forwarded-For/);
    // The replicas' configuration is valid, in activation mode, and believes the proxy's network.
    const { config } = loadConfig({
      argv: ['--config', 'docker/replicas/server.yaml'],
      env: { DATABASE_URL: 'postgres://x:y@postgres:5432/xiaozhi' },
      cwd: process.cwd(),
    });
    assert.equal(config.server.auth.mode, 'activation');
    assert.ok(config.server.trustProxy.includes('172.16.0.0/12'));
    assert.equal(config.store.url, 'postgres://x:y@postgres:5432/xiaozhi', 'DATABASE_URL names the store');
  });

  test('.dockerignore lets through every folder the build compiles, and no secrets', () => {
    const build = JSON.parse(readFileSync('tsconfig.build.json', 'utf8')) as { include: string[] };
    const lines = readFileSync('.dockerignore', 'utf8')
      .split('\n')
      .map((l) => l.trim());
    assert.equal(
      lines.find((l) => l && !l.startsWith('#')),
      '*',
      'a whitelist: everything is excluded first',
    );
    for (const dir of build.include) assert.ok(lines.includes(`!${dir}/`), `${dir}/ reaches the build`);
    for (const f of ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json'])
      assert.ok(lines.includes(`!${f}`), f);
    assert.ok(!lines.includes('!config.yaml') && !lines.includes('!.env'));
  });
});
