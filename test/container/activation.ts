/**
 * Container smoke for activation mode (run by .ci/container-smoke.sh, not by `npm test`): the
 * server runs in the image as the `node` user with `server.auth.mode: activation` (the launcher
 * mounts that config at /app/config.yaml) and keeps its database in the image's data directory
 * /data. A device on the host does OTA and gets a code; the operator's CLI, run inside the same
 * container while the server runs (`devices` on PATH, as `docker compose exec server devices …`
 * does), lists the pending code and binds it; the device then gets its token from OTA, connects
 * and has a turn. After a restart on the same /data the device is still bound (same token). Every line the server wrote to stdout is JSON. Exits 1 on any failure.
 *
 *   usage: tsx test/container/activation.ts [--timeout-ms N] -- <server launcher...> --- <exec launcher...>
 * The server launcher gets `/usr/bin/tini -- env HOST=… PORT=… OPENAI_BASE_URL=… node dist/server/main.js`
 * appended; the exec launcher `devices list` and `devices bind CODE`.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { DeviceSim } from '../fixtures/device-sim.ts';
import { fakeText, startFakeOpenAi, type FakeOpenAi } from '../fixtures/fake-openai.ts';
import { freePort, nonJsonLines, spawnServer, type SpawnedServer } from '../integration/ops/helpers/spawned-server.ts';
import { parseTwoLaunchers } from './two-launchers.ts';
import { imageServerArgs } from './server-command.ts';

const DEVICE = { 'Device-Id': 'c0:ff:ee:00:00:02', 'Client-Id': '3f0c8a52-6a1e-4c57-9d0b-7a2e41c9b8d1' };
const step = (name: string): void => void process.stderr.write(`activation smoke: ${name}\n`);

/** Runs one command in the container; resolves with its stdout, rejects with its stderr. */
function inContainer(launcher: readonly string[], args: readonly string[]): Promise<string> {
  const [command, ...prefix] = launcher as [string, ...string[]];
  return new Promise((resolve, reject) => {
    execFile(command, [...prefix, ...args], { timeout: 60_000 }, (err, stdout, stderr) => {
      if (err)
        reject(
          new Error(`${args.join(' ')} in the container failed (${err.message.split('\n')[0]}):\n${stderr}${stdout}`),
        );
      else resolve(stdout);
    });
  });
}

interface OtaAnswer {
  websocket?: { url?: string; token?: string };
  activation?: { code?: string; message?: string };
}

async function ota(httpUrl: string): Promise<OtaAnswer> {
  const res = await fetch(`${httpUrl}/xiaozhi/ota/`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Activation-Version': '1', ...DEVICE },
    body: JSON.stringify({
      version: 2,
      mac_address: DEVICE['Device-Id'],
      uuid: DEVICE['Client-Id'],
      application: { name: 'xiaozhi', version: '2.4.2' },
    }),
    signal: AbortSignal.timeout(10_000),
  });
  assert.equal(res.status, 200, 'OTA answers 200');
  return (await res.json()) as OtaAnswer;
}

async function main(): Promise<void> {
  const {
    timeoutMs,
    first: server,
    second: exec,
  } = parseTwoLaunchers(
    process.argv.slice(2),
    'tsx test/container/activation.ts [--timeout-ms N] -- <server launcher...> --- <exec launcher...>',
  );
  const t0 = performance.now();
  const watchdog = setTimeout(() => {
    process.stderr.write(`activation smoke: FAILED: no result after ${timeoutMs} ms\n`);
    process.exit(1);
  }, timeoutMs);
  watchdog.unref();

  let llm: FakeOpenAi | undefined;
  let srv: SpawnedServer | undefined;
  let dev: DeviceSim | undefined;
  try {
    llm = await startFakeOpenAi();
    const port = await freePort();
    const [command, ...prefix] = server as [string, ...string[]];
    step(`starting the server (activation mode) in the container on 127.0.0.1:${port}`);
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

    const first = await ota(srv.httpUrl);
    const code = first.activation?.code ?? '';
    assert.match(code, /^\d{6}$/, `an unknown device gets a 6-digit code: ${JSON.stringify(first)}`);
    // The image's XIAOZHI_BIND_COMMAND: the command that works in the container, not the sources' npm form.
    const message = first.activation?.message ?? '';
    assert.ok(
      message.includes(`devices bind ${code}`) && !message.includes('npm run'),
      `the activation message names devices bind CODE: ${message}`,
    );

    step(`code ${code}; devices list / bind inside the running container`);
    const pending = await inContainer(exec, ['devices', 'list']);
    assert.match(
      pending,
      new RegExp(`pending +code ${code} +${DEVICE['Device-Id']}`),
      `devices list shows the pending code:\n${pending}`,
    );
    const bound = await inContainer(exec, ['devices', 'bind', code]);
    assert.match(bound, /^bound [0-9a-f]{10} /, `devices bind CODE binds it:\n${bound}`);
    const listed = await inContainer(exec, ['devices', 'list']);
    assert.match(
      listed,
      new RegExp(`bound +[0-9a-f]{10} +${DEVICE['Device-Id']}`),
      `devices list shows the bound device:\n${listed}`,
    );

    const second = await ota(srv.httpUrl);
    assert.equal(second.activation, undefined, 'a bound device gets no code');
    const token = second.websocket?.token ?? '';
    assert.ok(token.length > 0, 'OTA hands the bound device its token');
    assert.equal(second.websocket?.url, `ws://127.0.0.1:${port}/xiaozhi/v1/`);

    step('the bound device connects and talks');
    dev = new DeviceSim({
      url: second.websocket?.url ?? '',
      deviceId: DEVICE['Device-Id'],
      clientId: DEVICE['Client-Id'],
      token,
    });
    await dev.hello();
    llm.script(fakeText('Bound in the container.'));
    dev.listen('detect', { text: 'Are you there?' });
    const sentence = await dev.waitJson('tts', 'sentence_start', 30_000);
    assert.equal(sentence.text, 'Bound in the container.');
    await dev.waitJson('tts', 'stop', 30_000);
    assert.ok(dev.audio.length > 0, 'the answer is spoken');

    step('SIGTERM to the container init');
    const tini = (await srv.descendants()).find((p) => p.name === 'tini');
    assert.ok(tini, 'tini runs in the container');
    process.kill(tini.pid, 'SIGTERM');
    assert.deepEqual(await srv.exited, { code: 0, signal: null }, 'the container exits 0');

    assert.deepEqual(nonJsonLines(srv.stdout()), [], 'every line the server wrote to stdout is JSON');
    const unwanted = /EACCES|telemetry/i;
    const said = srv
      .output()
      .split('\n')
      .filter((l) => unwanted.test(l));
    // The lines themselves: the output tail printed on failure may not reach back to them.
    assert.deepEqual(said, [], 'no permission error, nothing about telemetry');
    dev.close();

    // What the server stores survives a restart: the same /data (the compose volume) holds the
    // database, so the device is still bound and its token still opens a session.
    step('restarting the server on the same /data: the binding is still there');
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
    const again = await ota(srv.httpUrl);
    assert.equal(again.activation, undefined, 'still bound after the restart: no code');
    assert.equal(again.websocket?.token, token, 'the same token after the restart');
    dev = new DeviceSim({
      url: again.websocket?.url ?? '',
      deviceId: DEVICE['Device-Id'],
      clientId: DEVICE['Client-Id'],
      token,
    });
    await dev.hello();

    clearTimeout(watchdog);
    process.stdout.write(
      `${JSON.stringify({ activationSmoke: 'passed', totalMs: Math.round(performance.now() - t0) })}\n`,
    );
  } catch (err) {
    process.stderr.write(
      `activation smoke: FAILED: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    if (srv) process.stderr.write(`activation smoke: server output tail:\n${srv.output().slice(-4000)}\n`);
    process.exitCode = 1;
  } finally {
    dev?.close();
    await srv?.kill();
    await llm?.close();
  }
}

void main().then(() => process.exit(process.exitCode ?? 0));
