/**
 * /healthz, /readyz and /metrics through inject() and over a real loopback port: readiness states
 * (ready, degraded by a failed MCP server or an unreachable provider, 503 while draining), cached
 * checks, per-app registries, session counting, the child-process gauge and tool-server labels.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { createMcpManager, type McpManager } from '../../../mcp/manager.ts';
import { McpServersConfigSchema } from '../../../mcp/server-config.ts';
import { silentLogger } from '../../../core/logger.ts';
import { endpointCheck, healthRoutes, providerChecks, type ReadinessCheck } from '../../../server/health-route.ts';
import { metricsRoute } from '../../../features/metrics/metrics-route.ts';
import { createServerMetrics, type ServerMetrics } from '../../../features/metrics/server-metrics.ts';
import { countChildProcesses } from '../../../features/metrics/child-processes.ts';
import { toolServer } from '../../../features/metrics/tool-server.ts';
import { ConfigSchema } from '../../../server/config.ts';
import { DeviceSim } from '../../fixtures/device-sim.ts';
import { recordingConversation } from '../../helpers/recording-conversation.ts';
import { startTestApp, type TestApp } from '../../helpers/test-app.ts';
import { freePort } from './helpers/spawned-server.ts';
import { metricValue } from './helpers/spoken-turn.ts';

/** A real TCP listener that counts the connections it accepted. */
async function countingListener(): Promise<{ server: Server; port: number; connections: () => number }> {
  let n = 0;
  const server = createServer((s) => {
    n++;
    s.destroy();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const addr = server.address();
  return { server, port: typeof addr === 'object' && addr ? addr.port : 0, connections: () => n };
}

describe('health and metrics routes', () => {
  let t: TestApp;
  let metrics: ServerMetrics;
  let mcp: McpManager;
  let listener: Awaited<ReturnType<typeof countingListener>>;
  let closedPort: number;
  let ready = true;

  before(async () => {
    listener = await countingListener();
    closedPort = await freePort();
    // A real MCP manager with a server whose command does not exist: it ends up `failed`.
    mcp = createMcpManager({
      servers: McpServersConfigSchema.parse({ broken: { command: '/nonexistent/mcp-server' } }),
      log: silentLogger,
      reconnect: { initialMs: 60_000, maxMs: 60_000 },
    });
    // Subscribed before start(), so the connecting → failed transition is counted.
    metrics = createServerMetrics({ mcp, mcpServerNames: ['broken'] });
    await mcp.start();
    const checks: ReadinessCheck[] = [
      endpointCheck('llm', `http://127.0.0.1:${listener.port}/v1`) as ReadinessCheck,
      endpointCheck('tts', `http://127.0.0.1:${closedPort}/v1`) as ReadinessCheck,
    ];
    const rec = recordingConversation();
    t = await startTestApp({
      createConversation: metrics.countSessions(rec.factory),
      plugins: [healthRoutes({ mcp, ready: () => ready, checks, checkCacheMs: 60_000 }), metricsRoute({ metrics })],
    });
    metrics.bind({ activeSessions: () => t.app.registry.size });
  });
  after(async () => {
    await t?.close();
    await mcp?.close();
    metrics?.close();
    listener?.server.close();
  });

  test('/healthz answers 200 through inject() and over the port', async () => {
    const res = await t.app.fastify.inject({ method: 'GET', url: '/healthz' });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), { status: 'ok' });
    const real = await fetch(`${t.httpUrl}/healthz`);
    assert.equal(real.status, 200);
  });

  test('/readyz: degraded by a failed MCP server and an unreachable provider, checks cached', async () => {
    const res = await t.app.fastify.inject({ method: 'GET', url: '/readyz' });
    assert.equal(res.statusCode, 200, 'a dependency outage does not fail readiness');
    const body = res.json<{
      status: string;
      mcpServers: Array<{ name: string; state: string }>;
      checks: Array<{ name: string; ok: boolean; error?: string }>;
    }>();
    assert.equal(body.status, 'degraded');
    assert.deepEqual(
      body.mcpServers.map((s) => [s.name, s.state]),
      [['broken', 'failed']],
    );
    const llm = body.checks.find((c) => c.name === 'llm');
    const tts = body.checks.find((c) => c.name === 'tts');
    assert.equal(llm?.ok, true);
    assert.equal(tts?.ok, false);
    assert.match(tts?.error ?? '', /ECONNREFUSED/);
    assert.equal(listener.connections(), 1);
    // Within checkCacheMs the result is reused: probes do not hammer providers.
    const again = await fetch(`${t.httpUrl}/readyz`);
    assert.equal(again.status, 200);
    assert.equal(listener.connections(), 1);
  });

  test('/readyz answers 503 while not ready (starting or draining)', async () => {
    ready = false;
    try {
      const res = await t.app.fastify.inject({ method: 'GET', url: '/readyz' });
      assert.equal(res.statusCode, 503);
      assert.equal(res.json<{ status: string }>().status, 'not_ready');
    } finally {
      ready = true;
    }
  });

  test('/metrics: Prometheus text with the MCP state, and sessions counted from a real device', async () => {
    const first = await t.app.fastify.inject({ method: 'GET', url: '/metrics' });
    assert.equal(first.statusCode, 200);
    assert.match(String(first.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    assert.equal(metricValue(first.body, 'xiaozhi_sessions_total'), 0);
    assert.equal(metricValue(first.body, 'xiaozhi_mcp_server_state', 'server="broken",state="failed"'), 1);
    assert.equal(metricValue(first.body, 'xiaozhi_mcp_server_state', 'server="broken",state="ready"'), 0);
    assert.equal(metricValue(first.body, 'xiaozhi_mcp_state_changes_total', 'server="broken",state="failed"'), 1);
    for (const name of [
      'xiaozhi_resource_cache_hits_total',
      'xiaozhi_resource_cache_misses_total',
      'xiaozhi_late_frames_total',
      'nodejs_eventloop_lag_seconds',
    ]) {
      assert.ok(first.body.includes(`# TYPE ${name} `), `${name} is exposed`);
    }
    const dev = new DeviceSim({ url: t.wsUrl, deviceId: 'e3:00:00:00:00:01' });
    try {
      await dev.hello();
      const during = await (await fetch(`${t.httpUrl}/metrics`)).text();
      assert.equal(metricValue(during, 'xiaozhi_sessions_total'), 1);
      assert.equal(metricValue(during, 'xiaozhi_sessions_active'), 1);
    } finally {
      dev.close();
      await dev.closed;
    }
  });

  test('each app has its own registry: a second one starts at zero and registers without clashes', async () => {
    const other = createServerMetrics({ defaultMetrics: true });
    try {
      const text = (await other.render()).body;
      assert.equal(metricValue(text, 'xiaozhi_sessions_total'), 0);
      assert.equal(metricValue(text, 'xiaozhi_sessions_active'), 0);
      other.observeTurn({
        source: 'voice',
        outcome: 'failed',
        totalMs: 1200,
        lateFrames: 3,
        frameIntervals: 40,
        lateIntervals: 2,
        tools: [],
      });
      const after = (await other.render()).body;
      assert.equal(metricValue(after, 'xiaozhi_turns_total', 'source="voice",outcome="failed"'), 1);
      assert.equal(metricValue(after, 'xiaozhi_late_frames_total'), 3);
      assert.equal(metricValue(after, 'xiaozhi_downlink_intervals_total'), 40);
      assert.equal(metricValue(after, 'xiaozhi_downlink_late_intervals_total'), 2);
      assert.equal(metricValue(after, 'xiaozhi_turn_duration_seconds_bucket', 'le="1"'), 0);
      assert.equal(metricValue(after, 'xiaozhi_turn_duration_seconds_bucket', 'le="2"'), 1);
      // The first app did not see this turn.
      const mine = await (await fetch(`${t.httpUrl}/metrics`)).text();
      assert.equal(metricValue(mine, 'xiaozhi_turns_total', 'outcome="failed"'), undefined);
    } finally {
      other.close();
    }
  });
});

describe('metrics building blocks', () => {
  test('child processes are counted by program while they run, and gone after', async () => {
    const child = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      await new Promise((r) => child.once('spawn', r));
      const running = await countChildProcesses();
      assert.ok((running.get('sleep') ?? 0) >= 1, `counted: ${JSON.stringify([...running])}`);
    } finally {
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
    }
    const after = await countChildProcesses();
    assert.equal(after.get('sleep') ?? 0, 0);
    assert.deepEqual(await countChildProcesses({ procRoot: '/nonexistent-proc' }), new Map());
  });

  test('tool calls are labelled by configured server, device or local; invented prefixes stay bounded', () => {
    const servers = new Set(['music', 'weather']);
    assert.equal(toolServer('music__musicPlayer', servers), 'music');
    assert.equal(toolServer('mcp__weather__forecast', servers), 'weather');
    assert.equal(toolServer('get_current_datetime', servers), 'local');
    assert.equal(toolServer('self_audio_speaker_set_volume', servers), 'device');
    assert.equal(toolServer('device__self_get_device_status', servers), 'device');
    assert.equal(toolServer('made_up__thing', servers), 'unknown');
  });

  test('provider checks cover the remote providers only', () => {
    const local = ConfigSchema.parse({});
    assert.deepEqual(
      providerChecks(local).map((c) => [c.name, c.target]),
      [['llm', '127.0.0.1:11434']],
    );
    const cloud = ConfigSchema.parse({
      llm: { baseURL: 'https://api.example.com/v1' },
      asr: { provider: 'openai', baseURL: 'http://[::1]:9000/v1' },
      tts: { provider: 'openai', baseURL: 'https://tts.example.com:8443/v1' },
    });
    assert.deepEqual(
      providerChecks(cloud).map((c) => [c.name, c.target]),
      [
        ['llm', 'api.example.com:443'],
        ['asr', '::1:9000'],
        ['tts', 'tts.example.com:8443'],
      ],
    );
  });
});
