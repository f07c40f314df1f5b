/**
 * Container smoke test (run by .ci/container-smoke.sh, not by `npm test`): starts the server
 * inside the built image through a launcher command, the fake OpenAI-compatible LLM on the host
 * (the container shares the host network), then acts as a device from the host: OTA, hello, one
 * spoken turn, the device page at /, /healthz, /readyz and /metrics, then SIGTERM to the
 * container's init and a clean exit with nothing left running, and stdout that held JSON log
 * lines only. Prints one JSON line of timings; exits 1 on any failure.
 *
 *   usage: tsx test/container/smoke.ts [--timeout-ms N] -- <launcher...>
 *   e.g.   tsx test/container/smoke.ts -- buildah run --isolation chroot --user node CTR --
 * The launcher gets `/usr/bin/tini -- env HOST=… PORT=… OPENAI_BASE_URL=… node dist/server/main.js` appended.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { startFakeOpenAi, type FakeOpenAi } from '../fixtures/fake-openai.ts';
import { speak16k, utterancePackets } from '../helpers/speech.ts';
import { freePort, nonJsonLines, spawnServer, type SpawnedServer } from '../integration/ops/helpers/spawned-server.ts';
import { connectAndAsk, metricValue, otaWebsocketUrl } from '../integration/ops/helpers/spoken-turn.ts';
import { imageServerArgs } from './server-command.ts';

function parseArgs(argv: readonly string[]): { timeoutMs: number; launcher: string[] } {
  const sep = argv.indexOf('--');
  const own = sep >= 0 ? argv.slice(0, sep) : argv;
  const launcher = sep >= 0 ? argv.slice(sep + 1) : [];
  const t = own.indexOf('--timeout-ms');
  const timeoutMs = t >= 0 ? Number(own[t + 1]) : 180_000;
  if (launcher.length === 0 || !Number.isFinite(timeoutMs)) {
    process.stderr.write('usage: tsx test/container/smoke.ts [--timeout-ms N] -- <launcher...>\n');
    process.exit(2);
  }
  return { timeoutMs, launcher };
}

const step = (name: string): void => void process.stderr.write(`smoke: ${name}\n`);

async function main(): Promise<void> {
  const { timeoutMs, launcher } = parseArgs(process.argv.slice(2));
  const t0 = performance.now();
  // The whole run is bounded: a hang anywhere fails the CI step instead of stalling it.
  const watchdog = setTimeout(() => {
    process.stderr.write(`smoke: FAILED: no result after ${timeoutMs} ms\n`);
    process.exit(1);
  }, timeoutMs);
  watchdog.unref();

  let llm: FakeOpenAi | undefined;
  let srv: SpawnedServer | undefined;
  try {
    llm = await startFakeOpenAi();
    const port = await freePort();
    const packetsReady = utterancePackets(speak16k('what is the weather today'));
    const [command, ...prefix] = launcher as [string, ...string[]];
    step(`starting the server in the container on 127.0.0.1:${port}`);
    srv = await spawnServer({
      command,
      args: imageServerArgs(prefix, {
        HOST: '127.0.0.1',
        PORT: String(port),
        OPENAI_BASE_URL: llm.url,
        LLM_MODEL: 'fake-model',
        LOG_LEVEL: 'info',
      }),
      port,
      readyTimeoutMs: 60_000,
    });
    step(`healthy after ${Math.round(srv.readyMs)} ms`);

    const ready = await fetch(`${srv.httpUrl}/readyz`);
    const readyBody = (await ready.json()) as { status: string; checks: Array<{ name: string; ok: boolean }> };
    assert.equal(ready.status, 200, '/readyz 200');
    assert.equal(
      readyBody.status,
      'ready',
      `/readyz says ready (the fake LLM is reachable): ${JSON.stringify(readyBody)}`,
    );

    const wsUrl = await otaWebsocketUrl(srv.httpUrl, 'c0:ff:ee:00:00:01');
    assert.equal(wsUrl, `ws://127.0.0.1:${port}/xiaozhi/v1/`, 'OTA hands out the address the device used');
    step('OTA ok; speaking one turn');
    const turnStart = performance.now();
    const turn = await connectAndAsk(wsUrl, 'c0:ff:ee:00:00:01', await packetsReady);
    const turnMs = performance.now() - turnStart;
    assert.match(turn.recognised, /weather/i, `recognised in the container: ${turn.recognised}`);
    assert.match(turn.answer, /You said/);
    assert.ok(turn.audioMs > 600, `answer audio ${Math.round(turn.audioMs)} ms`);
    assert.ok((llm.requests.length ?? 0) >= 1, 'the server in the container reached the fake LLM on the host');

    // The browser device page (web/device, beside package.json in the image) is served at /.
    const page = await fetch(`${srv.httpUrl}/`);
    assert.equal(page.status, 200, 'GET / answers 200');
    assert.equal(
      await page.text(),
      readFileSync(new URL('../../web/device/index.html', import.meta.url), 'utf8'),
      'the page at / is web/device/index.html',
    );
    assert.equal((await fetch(`${srv.httpUrl}/js/main.js`)).status, 200, "the page's script is served");

    const health = await fetch(`${srv.httpUrl}/healthz`);
    assert.equal(health.status, 200, '/healthz 200');
    const metrics = await (await fetch(`${srv.httpUrl}/metrics`)).text();
    assert.ok(
      (metricValue(metrics, 'xiaozhi_turns_total', 'outcome="answered"') ?? 0) >= 1,
      'metrics count the answered turn',
    );
    assert.ok((metricValue(metrics, 'xiaozhi_first_audio_seconds_count') ?? 0) >= 1, 'first-audio latency observed');
    // The image builds the streaming helper: the embedded ASR runs it, not pocketsphinx_continuous.
    const pocketsphinx = metricValue(metrics, 'xiaozhi_child_processes', 'program="pocketsphinx-stream"');
    assert.ok((pocketsphinx ?? 0) >= 1, 'the child-process gauge sees the pocketsphinx helper inside the container');

    // The image ships the native espeak-ng helper: one per media worker, not the WASM fallback.
    const helpers = (await srv.descendants()).filter((p) => p.name === 'espeak-pcm');
    assert.ok(helpers.length >= 1, `the native espeak-ng helper runs in the container (${helpers.length})`);

    step('SIGTERM to the container init');
    const tini = (await srv.descendants()).find((p) => p.name === 'tini');
    assert.ok(tini, 'tini runs in the container');
    const stopStart = performance.now();
    process.kill(tini.pid, 'SIGTERM');
    const [closeCode, exit] = await Promise.all([turn.dev.closed, srv.exited]);
    const stopMs = performance.now() - stopStart;
    assert.equal(closeCode, 1001, 'the device gets a going-away close');
    assert.deepEqual(exit, { code: 0, signal: null }, 'the container exits 0');
    assert.ok(srv.logLines('stopped').length === 1, 'the server logged its clean stop');
    assert.deepEqual(nonJsonLines(srv.stdout()), [], 'every line the server wrote to stdout is JSON');
    assert.doesNotMatch(srv.output(), /telemetry/i, 'onnxruntime says nothing about telemetry (it is off)');
    await new Promise((r) => setTimeout(r, 300));
    const left = await srv.descendants();
    assert.deepEqual(left, [], 'no process left behind');

    clearTimeout(watchdog);
    const summary = {
      readyMs: Math.round(srv.readyMs),
      turnMs: Math.round(turnMs),
      stopMs: Math.round(stopMs),
      totalMs: Math.round(performance.now() - t0),
    };
    process.stdout.write(`${JSON.stringify({ smoke: 'passed', ...summary })}\n`);
  } catch (err) {
    process.stderr.write(`smoke: FAILED: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    if (srv) process.stderr.write(`smoke: server output tail:\n${srv.output().slice(-4000)}\n`);
    process.exitCode = 1;
  } finally {
    await srv?.kill();
    await llm?.close();
  }
}

void main().then(() => process.exit(process.exitCode ?? 0));
