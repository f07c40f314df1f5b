/**
 * Property over one hostile OTA request, against the real server on loopback in one auth mode
 * (open, or activation with its device registry in a data directory of its own): the request is
 * written byte for byte on a raw socket, and the server answers it with 200 or a 4xx, within a
 * bound (never a hang), with nothing in this process crashing and no error-level log line. The one
 * 5xx allowed is the documented activation refusal (503 with Retry-After: no complete identity, or
 * an identity that is not well formed). What the server stores stays bounded: the data directory is measured
 * every few cases, and at the end the server is restarted on it and must answer again.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { recordingConversation } from '../helpers/recording-conversation.ts';
import { startTestApp, type TestApp } from '../helpers/test-app.ts';
import { createLogWatch, type LogWatch } from './log-watch.ts';
import { watchHealth, type HealthWatch } from './health-watch.ts';
import type { OtaCase } from './ota-arbitraries.ts';

export type OtaAuthMode = 'open' | 'activation';

/** Bound on one exchange: far above loopback latency, under nothing the server would wait for. */
export const OTA_STEP_MS = 15_000;

/**
 * Bound on the data directory while the server runs: room for a database's write-ahead log
 * (SQLite's default checkpoint keeps it near 4 MB) besides what is stored.
 */
export const DATA_DIR_LIMIT_BYTES = 8 * 1024 * 1024;

/**
 * Bound on what the fuzz makes the server store, over the empty database's own size (its schema:
 * tables and indexes, which grow with every feature), measured with the server stopped (a
 * database has checkpointed and removed its log by then): at most 100 pending codes of a few
 * hundred bytes each, a secret, and in open mode a record of each invented pair with its labels
 * cut to 100 characters. A store that kept what strangers send would pass it with three
 * 100,000-character identities.
 */
export const STORED_LIMIT_BYTES = 256 * 1024;

export interface OtaAnswer {
  status: number;
  head: string;
  body: string;
}

export interface OtaTarget {
  mode: OtaAuthMode;
  app: TestApp;
  dataDir: string;
  logs: LogWatch;
  /** Answers by status, cases run, the largest data directory seen, what was stored at the restart. */
  stats: { cases: number; statuses: Map<number, number>; maxDataDirBytes: number; storedBytes?: number };
  health: HealthWatch;
  /** Stops the server, starts a new one on the same data directory (a restart), and checks it answers. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

/** Bytes of every file under `dir` (a registry file, a database and its journals alike). */
export function dirBytes(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    total += entry.isDirectory() ? dirBytes(p) : statSync(p).size;
  }
  return total;
}

function configFor(mode: OtaAuthMode, dataDir: string): Record<string, unknown> {
  return { server: { dataDir, auth: { mode } }, logging: { level: 'info' } };
}

export async function startOtaTarget(mode: OtaAuthMode): Promise<OtaTarget> {
  const dataDir = mkdtempSync(join(tmpdir(), `ota-fuzz-${mode}-`));
  const logs = createLogWatch();
  const health = watchHealth(logs);
  const start = (): Promise<TestApp> =>
    startTestApp({ createConversation: recordingConversation().factory, config: configFor(mode, dataDir), logs });
  let app: TestApp;
  let emptyBytes = 0;
  try {
    // The empty database's size, as the restart measures it: started once and stopped.
    await (await start()).close();
    emptyBytes = dirBytes(dataDir);
    app = await start();
  } catch (err) {
    health.stop();
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
  const target: OtaTarget = {
    mode,
    app,
    dataDir,
    logs,
    stats: { cases: 0, statuses: new Map(), maxDataDirBytes: 0 },
    health,
    async restart() {
      await target.app.close();
      const stored = dirBytes(dataDir);
      target.stats.storedBytes = stored;
      assert.ok(
        stored - emptyBytes <= STORED_LIMIT_BYTES,
        `${mode} mode: ${stored - emptyBytes} bytes stored in the data directory after the run beyond the empty database's ${emptyBytes} (limit ${STORED_LIMIT_BYTES})`,
      );
      target.app = await start();
      const probe = await sendRaw(
        target.app.port,
        rawRequest(target.app.port, {
          path: '/xiaozhi/ota/',
          headers: [['Content-Type', 'application/json']],
          body: Buffer.from('{}'),
          label: 'probe',
        }),
      );
      assert.ok(
        probe.status === 200 || (mode === 'activation' && probe.status === 503),
        `after a restart on the fuzzed data directory OTA answered ${probe.status}`,
      );
    },
    async close() {
      try {
        await target.app.close();
      } finally {
        health.stop();
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
  };
  return target;
}

/** The request's bytes: a request line, the case's headers as given, Host, Content-Length, Connection: close. */
export function rawRequest(port: number, c: OtaCase): Buffer {
  const lines = [
    `POST ${c.path} HTTP/1.1`,
    `Host: 127.0.0.1:${port}`,
    ...c.headers.map(([k, v]) => `${k}: ${v}`),
    `Content-Length: ${c.body.length}`,
    'Connection: close',
  ];
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`), c.body]);
}

/**
 * Writes `bytes` on a new connection (from the loopback address `from`, if given) and reads the
 * answer until the server closes it. `halfClose: false` keeps the writing side open (the
 * request says `Connection: close`): a server may drop a request whose client has half-closed
 * (`@fastify/static` does for a path with `..`), which no browser or device does. The server
 * may answer (a 413, a 431) and close before it has read everything: a reset after the status
 * line is an answer, a reset or close before it is not.
 */
export function sendRaw(
  port: number,
  bytes: Buffer,
  opts: { from?: string; halfClose?: boolean } = {},
): Promise<OtaAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect({
      host: '127.0.0.1',
      port,
      ...(opts.from !== undefined ? { localAddress: opts.from } : {}),
    });
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = (err?: Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const text = Buffer.concat(chunks).toString('latin1');
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      if (!status) {
        reject(err ?? new Error(`no HTTP answer (${text.length} bytes: ${JSON.stringify(text.slice(0, 200))})`));
        return;
      }
      const at = text.indexOf('\r\n\r\n');
      resolve({
        status: Number(status[1]),
        head: at >= 0 ? text.slice(0, at) : text,
        body: at >= 0 ? Buffer.from(text.slice(at + 4), 'latin1').toString('utf8') : '',
      });
    };
    const timer = setTimeout(() => finish(new Error(`no answer within ${OTA_STEP_MS} ms`)), OTA_STEP_MS);
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('end', () => finish());
    socket.on('close', () => finish());
    socket.on('error', (err) => finish(err));
    if (opts.halfClose === false) socket.write(bytes);
    else socket.end(bytes);
  });
}

/** Measures the data directory every this many cases (a directory walk costs more than a request). */
const MEASURE_EVERY = 25;

export async function runOtaCase(t: OtaTarget, c: OtaCase): Promise<void> {
  t.stats.cases++;
  const answer = await sendRaw(t.app.port, rawRequest(t.app.port, c));
  t.stats.statuses.set(answer.status, (t.stats.statuses.get(answer.status) ?? 0) + 1);
  const what = `${t.mode} mode, ${c.label}, ${c.path}: ${answer.status}`;
  if (answer.status >= 500) {
    // The documented refusal: activation only, on the code-issuing route, with a time to retry.
    assert.equal(t.mode, 'activation', `${what}: a 5xx in ${t.mode} mode (${answer.body.slice(0, 200)})`);
    assert.equal(answer.status, 503, `${what}: ${answer.body.slice(0, 200)}`);
    assert.match(answer.head, /^retry-after: \d+$/im, `${what}: a 503 without Retry-After`);
    assert.match(answer.body, /activation unavailable/, what);
  } else {
    assert.ok(answer.status === 200 || answer.status === 202 || (answer.status >= 400 && answer.status < 500), what);
  }
  if (answer.status === 200 && c.path.replace(/\/$/, '') === '/xiaozhi/ota') {
    const parsed = JSON.parse(answer.body) as { websocket?: { url?: unknown } };
    assert.equal(typeof parsed.websocket?.url, 'string', `${what}: a 200 without the WebSocket URL`);
  }
  t.health.assertHealthy(what);
  if (t.stats.cases % MEASURE_EVERY === 0) assertDataBounded(t, what);
}

export function assertDataBounded(t: OtaTarget, what: string): void {
  const bytes = dirBytes(t.dataDir);
  t.stats.maxDataDirBytes = Math.max(t.stats.maxDataDirBytes, bytes);
  assert.ok(
    bytes <= DATA_DIR_LIMIT_BYTES,
    `${what}: the data directory holds ${bytes} bytes (limit ${DATA_DIR_LIMIT_BYTES})`,
  );
}

export function describeOtaStats(t: OtaTarget): string {
  const statuses = [...t.stats.statuses]
    .sort(([a], [b]) => a - b)
    .map(([s, n]) => `${s}×${n}`)
    .join(' ');
  return `${t.mode}: cases ${t.stats.cases}, answers ${statuses || 'none'}, crashes ${t.health.crashes.length}, error lines ${t.logs.errorCount()}, data dir max ${(t.stats.maxDataDirBytes / 1024).toFixed(1)} KB${t.stats.storedBytes !== undefined ? `, ${(t.stats.storedBytes / 1024).toFixed(1)} KB stored at the restart` : ''}`;
}
