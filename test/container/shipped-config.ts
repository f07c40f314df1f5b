/**
 * Container smoke with the shipped configuration (run by .ci/container-smoke.sh, not by `npm
 * test`): the compose stack's two services from the built image, without a Docker engine. The
 * `mcp-audio` service runs in one container and the server in another with `docker/server.yaml`
 * as /app/config.yaml; both share the host network, and the server's container maps the compose
 * name `mcp-audio` to 127.0.0.1 (launcher's job). The fake LLM on the host (OPENAI_BASE_URL, the
 * documented cloud switch) asks for music; the track must reach the device as Opus through MCP
 * (musicPlayer → resource_link → paged resources/read → ffmpeg → Opus). Exits 1 on any failure.
 *
 *   usage: tsx test/container/shipped-config.ts --music DIR [--timeout-ms N] -- <mcp launcher...> --- <server launcher...>
 * The mcp launcher gets `node dist/examples/mcp-audio-server/main.js --http ...` appended; the
 * server launcher `/usr/bin/tini -- env OPENAI_BASE_URL=… node dist/server/main.js`.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { listDescendants } from '../../features/metrics/child-processes.ts';
import { DeviceSim } from '../fixtures/device-sim.ts';
import {
  fakeText,
  fakeToolCalls,
  onToolResults,
  onUserText,
  startFakeOpenAi,
  type FakeOpenAi,
} from '../fixtures/fake-openai.ts';
import { decodeDownlink } from '../helpers/speech.ts';
import { spawnServer, type SpawnedServer } from '../integration/ops/helpers/spawned-server.ts';
import { parseTwoLaunchers } from './two-launchers.ts';
import { imageServerArgs } from './server-command.ts';

/** The port docker/server.yaml gives both services (server 8000; mcp-audio 8808 in its URL). */
const SERVER_PORT = 8000;
const MCP_PORT = 8808;
const step = (name: string): void => void process.stderr.write(`shipped-config smoke: ${name}\n`);

/** Resolves once something accepts HTTP on the port (any status), rejects after `ms`. */
async function waitHttp(url: string, ms: number): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    try {
      await fetch(url, { signal: AbortSignal.timeout(2000) });
      return;
    } catch {
      if (Date.now() > until) throw new Error(`nothing answers at ${url} after ${ms} ms`);
      await new Promise((r) => setTimeout(r, 300));
    }
  }
}

async function main(): Promise<void> {
  const {
    timeoutMs,
    first: mcp,
    second: server,
  } = parseTwoLaunchers(
    process.argv.slice(2),
    'tsx test/container/shipped-config.ts [--timeout-ms N] -- <mcp launcher...> --- <server launcher...>',
  );
  const watchdog = setTimeout(() => {
    process.stderr.write(`shipped-config smoke: FAILED: no result after ${timeoutMs} ms\n`);
    process.exit(1);
  }, timeoutMs);
  watchdog.unref();
  let llm: FakeOpenAi | undefined;
  let srv: SpawnedServer | undefined;
  const [mcpCmd, ...mcpPrefix] = mcp as [string, ...string[]];
  // As in docker/compose.yml: bound to all interfaces, so requests for Host `mcp-audio` are served
  // (bound to loopback, the server accepts loopback Host headers only).
  const mcpProc = spawn(
    mcpCmd,
    [
      ...mcpPrefix,
      'node',
      'dist/examples/mcp-audio-server/main.js',
      '--http',
      '--host',
      '0.0.0.0',
      '--port',
      String(MCP_PORT),
      '--music-dir',
      '/music',
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let mcpOut = '';
  mcpProc.stdout.on('data', (d: Buffer) => (mcpOut += d.toString()));
  mcpProc.stderr.on('data', (d: Buffer) => (mcpOut += d.toString()));
  try {
    step(`mcp-audio container on 127.0.0.1:${MCP_PORT}`);
    await waitHttp(`http://127.0.0.1:${MCP_PORT}/mcp`, 60_000);
    llm = await startFakeOpenAi();
    llm.rule(onToolResults(fakeText('Enjoy.')));
    llm.rule(onUserText(/music/i, fakeToolCalls([{ name: 'music__musicPlayer', arguments: '{"query":"music"}' }])));
    const [cmd, ...prefix] = server as [string, ...string[]];
    step('server container with docker/server.yaml');
    srv = await spawnServer({
      command: cmd,
      args: imageServerArgs(prefix, { OPENAI_BASE_URL: llm.url, LLM_MODEL: 'fake-model' }),
      port: SERVER_PORT,
      readyTimeoutMs: 90_000,
    });
    assert.ok(
      srv.logLines('configuration loaded').some((l) => l.file === '/app/config.yaml'),
      'the shipped config file was read',
    );
    const ready = (await (await fetch(`${srv.httpUrl}/readyz`)).json()) as {
      status: string;
      mcpServers: Array<{ name: string; state: string }>;
      problems?: unknown[];
    };
    assert.deepEqual(
      ready.mcpServers.map((s) => [s.name, s.state]),
      [['music', 'ready']],
      JSON.stringify(ready),
    );
    assert.deepEqual(ready.problems ?? [], [], 'no provider problem with the cloud switch set');

    step('device asks for music');
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId: 'c0:ff:ee:00:00:02' });
    try {
      await dev.hello();
      dev.listen('detect', { text: 'play some music' });
      await dev.waitJson('tts', 'stop', 60_000);
      const names = dev.json
        .filter((j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start')
        .map((j) => String(j.msg.text));
      const decoded = await decodeDownlink(dev.audio.map((a) => a.payload));
      assert.ok(
        decoded.ms > 2500 && decoded.rms > 300,
        `the track played: ${Math.round(decoded.ms)} ms of audio, rms ${Math.round(decoded.rms)}`,
      );
      assert.ok(/"track chosen"/.test(mcpOut), 'the MCP server in its container chose the track');
      process.stdout.write(
        `${JSON.stringify({ shippedConfigSmoke: 'passed', sentences: names, audioMs: Math.round(decoded.ms), mcp: ready.mcpServers })}\n`,
      );
    } finally {
      dev.close();
    }
    clearTimeout(watchdog);
  } catch (err) {
    process.stderr.write(
      `shipped-config smoke: FAILED: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    if (srv) process.stderr.write(`server output tail:\n${srv.output().slice(-3000)}\n`);
    process.stderr.write(`mcp-audio output tail:\n${mcpOut.slice(-2000)}\n`);
    process.exitCode = 1;
  } finally {
    await srv?.kill();
    // The launcher's children (the container's processes) go too, not only the launcher.
    if (mcpProc.pid !== undefined)
      for (const p of await listDescendants({ pid: mcpProc.pid }).catch(() => [])) process.kill(p.pid, 'SIGKILL');
    mcpProc.kill('SIGKILL');
    await llm?.close();
  }
}

void main().then(() => process.exit(process.exitCode ?? 0));
