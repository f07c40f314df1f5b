/**
 * Graceful drain in a real server process (`node --import tsx server/main.ts --config FILE`, the
 * way `npm start` runs it, signalled directly as tini does in the image): SIGTERM during a turn
 * stops new devices and reports not-ready, lets the turn finish (or aborts it at the deadline),
 * closes the device with 1001, exits 0 and leaves no child process behind. The same signal again
 * at once (npm forwarding its copy) changes nothing.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { startFakeOpenAi, fakeText, type FakeOpenAi } from '../../fixtures/fake-openai.ts';
import { DeviceSim } from '../../fixtures/device-sim.ts';
import { freePort, spawnServer, type SpawnedServer } from './helpers/spawned-server.ts';
import { otaWebsocketUrl } from './helpers/spoken-turn.ts';
import { sleep } from '../../helpers/wait.ts';

/** Env without the variables that would override the test's config file. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of [
    'HOST',
    'PORT',
    'OPENAI_BASE_URL',
    'OPENAI_API_KEY',
    'LLM_MODEL',
    'LOG_LEVEL',
    'PUBLIC_WS_URL',
    'XIAOZHI_CONFIG',
  ])
    delete env[k];
  return env;
}

async function startServer(llmUrl: string, drainTimeoutMs: number, dir: string): Promise<SpawnedServer> {
  const port = await freePort();
  const file = join(dir, `config-${port}.yaml`);
  writeFileSync(
    file,
    stringify({
      server: { host: '127.0.0.1', port, drainTimeoutMs, dataDir: join(dir, `data-${port}`) },
      llm: { baseURL: llmUrl, model: 'fake-model', maxRetries: 0, timeoutMs: 10_000 },
      logging: { level: 'info' },
    }),
  );
  return spawnServer({
    command: process.execPath,
    args: ['--import', 'tsx', 'server/main.ts', '--config', file],
    env: cleanEnv(),
    port,
    readyTimeoutMs: 60_000,
  });
}

describe('SIGTERM drain in a spawned server process', () => {
  let llm: FakeOpenAi | undefined;
  const dir = mkdtempSync(join(tmpdir(), 'ops-drain-'));
  const servers: SpawnedServer[] = [];
  after(async () => {
    for (const s of servers) await s.kill();
    await llm?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a turn in progress finishes, new devices are refused, the device gets 1001, exit 0, no children', async () => {
    llm ??= await startFakeOpenAi();
    const srv = await startServer(llm.url, 15_000, dir);
    servers.push(srv);
    const before = await srv.descendants();
    assert.ok(
      before.some((p) => p.name === 'pocketsphinx-stream' || p.name === 'pocketsphinx_continuous'),
      `the server runs its ASR child: ${before.map((p) => p.name).join(', ')}`,
    );

    const wsUrl = await otaWebsocketUrl(srv.httpUrl, 'e4:00:00:00:00:01');
    const dev = new DeviceSim({ url: wsUrl, deviceId: 'e4:00:00:00:00:01' });
    try {
      await dev.hello();
      // The model is slow to start: SIGTERM lands while the turn is thinking.
      llm.script(fakeText('The drain lets this answer finish. Then the session closes.', { firstDelayMs: 1500 }));
      dev.listen('detect', { text: 'Tell me something while I shut you down.' });
      await dev.waitJson('stt', undefined, 10_000);
      const signalledAt = performance.now();
      srv.proc.kill('SIGTERM');

      // While draining: not ready, and a new device is turned away.
      let readyStatus = 0;
      for (let i = 0; i < 50 && readyStatus !== 503; i++) {
        readyStatus = (await fetch(`${srv.httpUrl}/readyz`).catch(() => ({ status: -1 }))).status;
        if (readyStatus !== 503) await sleep(20);
      }
      assert.equal(readyStatus, 503, '/readyz says not ready while draining');
      const late = new DeviceSim({ url: wsUrl, deviceId: 'e4:00:00:00:00:02' });
      await assert.rejects(late.opened, /HTTP 503/);
      late.close();

      const [code, exit] = await Promise.all([dev.closed, srv.exited]);
      const tl = dev.timeline.map((e) =>
        e.kind === 'audio' ? 'audio' : `${String(e.msg.type)}:${String(e.msg.state ?? '')}`,
      );
      assert.ok(
        tl.includes('tts:stop'),
        `the turn finished before the close: ${tl.filter((x) => x !== 'audio').join(' ')}`,
      );
      assert.ok(dev.audio.length > 10, 'the answer was spoken');
      assert.equal(code, 1001, 'going-away close');
      assert.deepEqual(exit, { code: 0, signal: null });
      // Generous: the drain deadline is 15 s; finishing the turn takes a few seconds.
      assert.ok(performance.now() - signalledAt < 14_000, 'did not wait for the deadline once the turn was done');
      assert.equal(srv.logLines('stopped').length, 1);
      assert.equal(srv.logLines('turn timings').at(-1)?.outcome, 'answered');
      assert.deepEqual(await srv.descendants(), [], 'no child process left');
    } finally {
      dev.close();
    }
  });

  test('the same signal again 50 ms later (npm forwarding its copy) is not a second request: the turn finishes, exit 0', async () => {
    llm ??= await startFakeOpenAi();
    const srv = await startServer(llm.url, 15_000, dir);
    servers.push(srv);
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId: 'e4:00:00:00:00:04' });
    try {
      await dev.hello();
      llm.script(fakeText('This answer still finishes.', { firstDelayMs: 1500 }));
      dev.listen('detect', { text: 'Keep going after the signal.' });
      await dev.waitJson('stt', undefined, 10_000);
      srv.proc.kill('SIGINT');
      // Apart enough that the kernel delivers both (a pending signal is not queued twice).
      await sleep(50);
      srv.proc.kill('SIGINT');
      const [code, exit] = await Promise.all([dev.closed, srv.exited]);
      assert.equal(srv.logLines('second signal: exiting now').length, 0, srv.output().slice(-3000));
      assert.equal(
        srv.logLines('signal repeated at once (npm forwards its copy): still draining; signal again to exit now')
          .length,
        1,
      );
      assert.equal(srv.logLines('turn timings').at(-1)?.outcome, 'answered');
      assert.equal(code, 1001);
      assert.deepEqual(exit, { code: 0, signal: null });
    } finally {
      dev.close();
    }
  });

  test('a turn longer than the drain deadline is aborted; still 1001 and exit 0 with no children', async () => {
    llm ??= await startFakeOpenAi();
    const srv = await startServer(llm.url, 500, dir);
    servers.push(srv);
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId: 'e4:00:00:00:00:03' });
    try {
      await dev.hello();
      // A long answer streamed slowly: it cannot finish within 500 ms.
      llm.script(
        fakeText('This answer is far too long to finish before the deadline. '.repeat(6), {
          firstDelayMs: 200,
          delayMs: 60,
        }),
      );
      dev.listen('detect', { text: 'Talk for a long time.' });
      await dev.waitJson('stt', undefined, 10_000);
      const signalledAt = performance.now();
      srv.proc.kill('SIGTERM');
      const [code, exit] = await Promise.all([dev.closed, srv.exited]);
      const ms = performance.now() - signalledAt;
      assert.equal(code, 1001);
      assert.deepEqual(exit, { code: 0, signal: null });
      assert.ok(ms < 10_000, `stopped ${Math.round(ms)} ms after SIGTERM`);
      assert.equal(srv.logLines('turn timings').at(-1)?.outcome, 'aborted', 'the deadline aborted the turn');
      assert.deepEqual(await srv.descendants(), [], 'no child process left');
    } finally {
      dev.close();
    }
  });
});
