/**
 * Admission control end to end: the server wired as main.ts wires it (assembleServer) on a
 * loopback port, real `ws` clients. A saturated server refuses new devices with HTTP 503 and
 * `Retry-After` before the upgrade (session budget, event-loop delay of this very process, media
 * queue from an injected load source), counts them in /metrics, keeps OTA and health answering, and
 * admits devices again once the pressure is gone.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { assembleServer, type AssembledServer, type AssembleOptions } from '../../../server/assemble.ts';
import { ConfigSchema } from '../../../server/config.ts';
import { createLogger } from '../../../server/logger.ts';
import { DeviceSim } from '../../fixtures/device-sim.ts';
import { startFakeOpenAi, type FakeOpenAi } from '../../fixtures/fake-openai.ts';
import { createLogSink, type LogSink } from '../../helpers/log-sink.ts';
import { listenOnLoopback } from '../../helpers/listen.ts';
import { sleep } from '../../helpers/wait.ts';

interface Server {
  srv: AssembledServer;
  logs: LogSink;
  httpUrl: string;
  wsUrl: string;
}

let llm: FakeOpenAi | undefined;
before(async () => {
  llm = await startFakeOpenAi();
});
after(async () => {
  await llm?.close();
});

/** The production wiring with the fake LLM; closed again if listening fails. */
async function start(server: Record<string, unknown>, opts: AssembleOptions = {}): Promise<Server> {
  assert.ok(llm, 'the fake LLM started');
  const config = ConfigSchema.parse({
    llm: { baseURL: llm.url, apiKey: '', model: 'fake-model', maxRetries: 0, timeoutMs: 5000 },
    server,
    store: { url: 'sqlite::memory:' },
  });
  const logs = createLogSink();
  const srv = await assembleServer(
    config,
    createLogger({ level: 'debug', logContent: false, destination: logs.stream }),
    opts,
  );
  try {
    return { srv, logs, ...(await listenOnLoopback(srv.app)) };
  } catch (err) {
    await srv.close();
    throw err;
  }
}

type Attempt =
  | { status: 101; ws: WebSocket }
  | { status: number; retryAfter: string | undefined; body: Record<string, unknown> };

/** One upgrade attempt with a plain `ws` client: the open socket, or the HTTP refusal it got. */
function attempt(wsUrl: string, deviceId: string): Promise<Attempt> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(wsUrl, {
      headers: { 'Device-Id': deviceId, 'Protocol-Version': '1' },
      perMessageDeflate: false,
    });
    const timer = setTimeout(() => {
      ws.terminate();
      reject(new Error('upgrade attempt timed out'));
    }, 20_000);
    ws.once('open', () => {
      clearTimeout(timer);
      resolve({ status: 101, ws });
    });
    ws.once('unexpected-response', (_req, res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        clearTimeout(timer);
        const retryAfter = res.headers['retry-after'];
        resolve({
          status: res.statusCode ?? 0,
          retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter,
          body: JSON.parse(text || '{}') as Record<string, unknown>,
        });
      });
    });
    ws.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

/** Closes an admitted attempt's socket. */
function release(a: Attempt): void {
  if ('ws' in a) a.ws.close();
}

/** Retries `attempt` until `accept` holds; fails after `timeoutMs` with what it saw last. */
async function attemptUntil(
  wsUrl: string,
  deviceId: string,
  accept: (a: Attempt) => boolean,
  what: string,
  timeoutMs = 20_000,
): Promise<Attempt> {
  const deadline = Date.now() + timeoutMs;
  let last: Attempt | undefined;
  for (;;) {
    last = await attempt(wsUrl, deviceId);
    if (accept(last)) return last;
    release(last);
    if (Date.now() > deadline) throw new Error(`${what}: still status ${last.status} after ${timeoutMs} ms`);
    await sleep(100);
  }
}

async function metricsText(httpUrl: string): Promise<string> {
  const res = await fetch(`${httpUrl}/metrics`);
  assert.equal(res.status, 200);
  return res.text();
}

function metric(text: string, name: string, labels = ''): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(labels ? `${name}{${labels}} ` : `${name} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** The firmware's OTA request; answers the status. */
async function ota(httpUrl: string, deviceId: string): Promise<number> {
  const res = await fetch(`${httpUrl}/xiaozhi/ota/`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Device-Id': deviceId, 'Client-Id': 'admission-test' },
    body: JSON.stringify({
      application: { name: 'xiaozhi', version: '2.4.2' },
      mac_address: deviceId,
      board: { type: 'bread-compact-wifi' },
    }),
    signal: AbortSignal.timeout(20_000),
  });
  await res.arrayBuffer();
  return res.status;
}

/** A typed (`listen detect`) turn answered by the fake LLM: the device can talk. */
async function talk(dev: DeviceSim, text: string): Promise<void> {
  const from = dev.json.length;
  dev.listen('detect', { text });
  const stt = await dev.waitFor('stt', () => dev.json.slice(from).find((j) => j.msg.type === 'stt')?.msg, 15_000);
  assert.equal(stt.text, text);
  const s = await dev.waitJson('tts', 'sentence_start', 15_000, from);
  assert.match(String(s.text), /You said/);
  await dev.waitJson('tts', 'stop', 15_000, from);
}

describe('admission control', () => {
  test('server.maxSessions: two devices talk, the third gets 503 + Retry-After before the upgrade, counted as capacity', async () => {
    // Event-loop admission off: this test is about the session budget alone.
    const s = await start({ maxSessions: 2, admission: { maxEventLoopDelayMs: 0, retryAfterS: 7 } });
    const devs: DeviceSim[] = [];
    try {
      devs.push(
        new DeviceSim({ url: s.wsUrl, deviceId: 'ad:00:00:00:00:01' }),
        new DeviceSim({ url: s.wsUrl, deviceId: 'ad:00:00:00:00:02' }),
      );
      await Promise.all(devs.map((d) => d.hello()));
      await Promise.all(devs.map((d, i) => talk(d, `hello from device ${i + 1}`)));

      const third = await attempt(s.wsUrl, 'ad:00:00:00:00:03');
      release(third);
      assert.equal(third.status, 503);
      assert.ok(!('ws' in third));
      assert.equal(third.retryAfter, '7');
      assert.equal(third.body.error, 'server at capacity');
      assert.equal(s.srv.app.registry.size, 2, 'no session was created for the refused device');

      const m = await metricsText(s.httpUrl);
      assert.equal(metric(m, 'xiaozhi_connections_refused_total', 'reason="capacity"'), 1);
      assert.equal(metric(m, 'xiaozhi_connections_refused_total', 'reason="overloaded"'), undefined);
      // The admitted devices were not disturbed by the refusal.
      await talk(devs[0] as DeviceSim, 'still there?');
      assert.equal(devs[0]?.closeCode, null);
    } finally {
      for (const d of devs) d.close();
      await s.srv.close();
    }
  });

  test('event-loop pressure: new devices get 503 overloaded while the main thread stalls, OTA still answers, admitted again after', async () => {
    const s = await start({ admission: { maxEventLoopDelayMs: 100, retryAfterS: 5 } });
    let pressure: NodeJS.Timeout | undefined;
    const stopPressure = (): void => {
      if (pressure) clearInterval(pressure);
      pressure = undefined;
    };
    try {
      // Admitted while the loop is idle.
      release(
        await attemptUntil(s.wsUrl, 'ae:00:00:00:00:01', (a) => a.status === 101, 'admitted before the pressure'),
      );

      // The server runs in this process: 400 ms busy loops, each followed by ~100 ms of free loop
      // (an interval's next run is due 500 ms after the previous one started), stall its loop.
      pressure = setInterval(() => {
        const end = performance.now() + 400;
        while (performance.now() < end) {
          /* busy */
        }
      }, 500);
      const refused = await attemptUntil(
        s.wsUrl,
        'ae:00:00:00:00:02',
        (a) => a.status !== 101,
        'refused under event-loop pressure',
      );
      assert.equal(refused.status, 503);
      assert.ok(!('ws' in refused));
      assert.equal(refused.retryAfter, '5');
      assert.deepEqual(refused.body, { error: 'server overloaded', reason: 'event_loop_delay' });

      // Only the WebSocket upgrade is gated: the device's OTA and the probes keep answering.
      assert.equal(await ota(s.httpUrl, 'ae:00:00:00:00:02'), 200);
      assert.equal((await fetch(`${s.httpUrl}/healthz`)).status, 200);
      const m = await metricsText(s.httpUrl);
      assert.ok(
        (metric(m, 'xiaozhi_connections_refused_total', 'reason="overloaded"') ?? 0) >= 1,
        'refusal counted as overloaded',
      );
      assert.ok(
        (metric(m, 'xiaozhi_admission_event_loop_delay_seconds') ?? 0) > 0.1,
        'the gauge shows the judged delay',
      );
      stopPressure();

      // Back under the limit (hysteresis: under 80 % of it, one or two 1 s windows later): admitted.
      const again = await attemptUntil(
        s.wsUrl,
        'ae:00:00:00:00:02',
        (a) => a.status === 101,
        'admitted after the pressure',
      );
      release(again);
      const warned = s.logs.find('device refused: server overloaded');
      assert.ok(warned.length >= 1, 'the refusal is logged');
      assert.equal(warned[0]?.signal, 'event_loop_delay');
    } finally {
      stopPressure();
      await s.srv.close();
    }
  });

  test('media pressure from the injected load source: 503 overloaded while the queue is deep, admitted when it drains', async () => {
    const load = { queueDepth: 0 };
    const s = await start({ admission: { maxEventLoopDelayMs: 0, maxMediaQueue: 10 } }, { mediaLoad: () => load });
    try {
      const first = await attempt(s.wsUrl, 'af:00:00:00:00:01');
      release(first);
      assert.equal(first.status, 101);

      load.queueDepth = 50;
      // A storm of devices: each one refused before the upgrade, the log gets one line for them.
      const storm = await Promise.all(Array.from({ length: 5 }, (_, i) => attempt(s.wsUrl, `af:00:00:00:01:0${i}`)));
      for (const a of storm) {
        release(a);
        assert.equal(a.status, 503);
        assert.equal((a as { retryAfter?: string }).retryAfter, '5', 'the default Retry-After');
        assert.deepEqual((a as { body?: unknown }).body, { error: 'server overloaded', reason: 'media_queue' });
      }
      assert.equal(s.srv.app.registry.size, 0);
      assert.equal(await ota(s.httpUrl, 'af:00:00:00:01:00'), 200, 'OTA answers while overloaded');
      assert.equal((await fetch(`${s.httpUrl}/readyz`)).status, 200, 'readiness is not admission');
      assert.equal(s.logs.find('device refused: server overloaded').length, 1, 'at most one warn line per second');

      // Hysteresis: 9 is under the limit but not under 80 % of it.
      load.queueDepth = 9;
      assert.equal((await attempt(s.wsUrl, 'af:00:00:00:02:01')).status, 503);
      load.queueDepth = 0;
      const dev = new DeviceSim({ url: s.wsUrl, deviceId: 'af:00:00:00:02:01' });
      try {
        await dev.hello();
        await talk(dev, 'the queue drained');
      } finally {
        dev.close();
      }
      const m = await metricsText(s.httpUrl);
      assert.equal(metric(m, 'xiaozhi_connections_refused_total', 'reason="overloaded"'), 6);
      assert.equal(metric(m, 'xiaozhi_connections_refused_total', 'reason="capacity"'), undefined);
    } finally {
      await s.srv.close();
    }
  });
});
