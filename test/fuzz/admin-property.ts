/**
 * Property over one hostile admin API request, against the real server on loopback (activation
 * mode, the admin token set, its store in a data directory of its own). The request is written
 * byte for byte from one of a few loopback addresses, and the server answers within a bound with
 * nothing in this process crashing and no error-level log line. The bounds checked:
 * - no 5xx but a 503 the route table declares for that route;
 * - a wrong token never gets in (no 2xx but the sign-in state of `GET /session` and the sign-out),
 *   and the right one is never called wrong (no 401);
 * - every wrong token the server looked at spent a guess: per address, or per known client, the
 *   answers that show a wrong token was compared (401, or `GET /session`'s 200) are at most the
 *   burst (5) plus the refill (5 a minute) since that key's first guess, and every 429 says
 *   Retry-After;
 * - the server stays up (`/healthz` every few cases) and its memory and data directory bounded.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { recordingConversation } from '../helpers/recording-conversation.ts';
import { startTestApp, type TestApp } from '../helpers/test-app.ts';
import { ADMIN_ROUTES } from '../../features/admin/routes.ts';
import { fastifyPath } from '../../features/admin/route.ts';
import { healthRoutes } from '../../server/health-route.ts';
import { createLogWatch, type LogWatch } from './log-watch.ts';
import { watchHealth, type HealthWatch } from './health-watch.ts';
import { DATA_DIR_LIMIT_BYTES, dirBytes, OTA_STEP_MS, sendRaw, type OtaAnswer } from './ota-property.ts';
import { PLACEHOLDERS, type AdminCase } from './admin-arbitraries.ts';

export const ADMIN_FUZZ_TOKEN = 'admin-fuzz-token-0123456789abcdef';
/** The server's guess budget (features/admin/plugin.ts): the model below must match it. */
const BURST = 5;
const PER_MINUTE = 5;
/** Heap growth allowed over a run, measured after GC (only when run with --expose-gc). */
export const HEAP_GROWTH_LIMIT_BYTES = 64 * 1024 * 1024;

export interface AdminTarget {
  app: TestApp;
  dataDir: string;
  logs: LogWatch;
  /** Cookie values the placeholders stand for. */
  cookies: { session: string; known: string };
  /** Guesses the server showed it compared, per budget key, and when that key's first came. */
  guesses: Map<string, { compared: number; since: number }>;
  stats: {
    cases: number;
    statuses: Map<number, number>;
    maxDataDirBytes: number;
    heapBefore?: number;
    heapGrowth?: number;
  };
  health: HealthWatch;
  close(): Promise<void>;
}

function heapAfterGc(): number | undefined {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) return undefined;
  gc();
  return process.memoryUsage().heapUsed;
}

/** The cookie `name`'s value from a Set-Cookie list. */
function setCookie(list: string[], name: string): string {
  const c = list.find((x) => x.startsWith(`${name}=`));
  assert.ok(c, `Set-Cookie ${name} in ${list.join(' | ')}`);
  return c.slice(name.length + 1).split(';')[0] as string;
}

export async function startAdminTarget(): Promise<AdminTarget> {
  const dataDir = mkdtempSync(join(tmpdir(), 'admin-fuzz-'));
  const logs = createLogWatch();
  const health = watchHealth(logs);
  let app: TestApp;
  try {
    app = await startTestApp({
      createConversation: recordingConversation().factory,
      config: {
        admin: { token: ADMIN_FUZZ_TOKEN },
        server: { dataDir, auth: { mode: 'activation' } },
        logging: { level: 'info' },
      },
      plugins: [healthRoutes({ ready: () => true })],
      logs,
    });
  } catch (err) {
    health.stop();
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
  // The operator signs in once: the session and known-client cookies the cases may carry.
  const signIn = await fetch(`${app.httpUrl}/api/admin/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: app.httpUrl },
    body: JSON.stringify({ token: ADMIN_FUZZ_TOKEN }),
  });
  assert.equal(signIn.status, 200);
  const cookies = {
    session: setCookie(signIn.headers.getSetCookie(), 'xiaozhi_admin'),
    known: setCookie(signIn.headers.getSetCookie(), 'xiaozhi_admin_client'),
  };
  const heapBefore = heapAfterGc();
  const target: AdminTarget = {
    app,
    dataDir,
    logs,
    cookies,
    guesses: new Map(),
    stats: { cases: 0, statuses: new Map(), maxDataDirBytes: 0, ...(heapBefore !== undefined ? { heapBefore } : {}) },
    health,
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

function substitute(t: AdminTarget, value: string): string {
  return value
    .replaceAll(PLACEHOLDERS.token, ADMIN_FUZZ_TOKEN)
    .replaceAll(PLACEHOLDERS.session, t.cookies.session)
    .replaceAll(PLACEHOLDERS.known, t.cookies.known)
    .replaceAll('{own}', t.app.httpUrl);
}

/** The request's bytes: request line, Host, the case's headers, Content-Length, Connection: close. */
export function adminRawRequest(t: AdminTarget, c: AdminCase): Buffer {
  const body = Buffer.from(substitute(t, c.body.toString('latin1')), 'latin1');
  const lines = [
    `${c.method} ${c.path} HTTP/1.1`,
    `Host: 127.0.0.1:${t.app.port}`,
    ...c.headers.map(([k, v]) => `${k}: ${substitute(t, v)}`),
    `Content-Length: ${body.length}`,
    'Connection: close',
  ];
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), body]);
}

/** The route the request reaches, by method and path (HEAD reaches GET), or undefined. */
function routeOf(method: string, path: string): (typeof ADMIN_ROUTES)[number] | undefined {
  const m = method === 'HEAD' ? 'GET' : method;
  return ADMIN_ROUTES.find((r) => {
    if (r.method !== m) return false;
    const pattern = new RegExp(`^/api/admin${fastifyPath(r.path).replace(/:\w+/g, '[^/]+')}$`);
    return pattern.test(path.split('?')[0] ?? '');
  });
}

/** Probes /healthz and measures the data directory every this many cases. */
const PROBE_EVERY = 25;

export async function runAdminCase(t: AdminTarget, c: AdminCase): Promise<void> {
  t.stats.cases++;
  const answer: OtaAnswer = await sendRaw(t.app.port, adminRawRequest(t, c), { from: c.from, halfClose: false });
  t.stats.statuses.set(answer.status, (t.stats.statuses.get(answer.status) ?? 0) + 1);
  const what = `${c.label} (${c.method} ${c.path.slice(0, 80)} from ${c.from}): ${answer.status} ${answer.body.slice(0, 200)}`;
  const route = routeOf(c.method, c.path);

  // No 5xx but what the route table declares.
  if (answer.status >= 500) {
    assert.equal(answer.status, 503, what);
    assert.ok(route?.errors?.[503] !== undefined, `${what}: a 503 the route does not declare`);
  }
  if (answer.status === 429) assert.match(answer.head, /^retry-after: \d+$/im, `${what}: a 429 without Retry-After`);

  // Credentials: a wrong token never gets in, the right one is never called wrong.
  const sessionPath = c.path === '/api/admin/session';
  const whoAmI = sessionPath && (c.method === 'GET' || c.method === 'HEAD');
  if (c.credential === 'wrong' && answer.status >= 200 && answer.status < 300) {
    assert.ok(whoAmI || (sessionPath && c.method === 'DELETE'), `${what}: a wrong token got in`);
    if (whoAmI && c.method === 'GET') assert.match(answer.body, /"signedIn":false/, `${what}: a wrong token signed in`);
  }
  if (c.credential === 'right') assert.notEqual(answer.status, 401, `${what}: the right token called wrong`);

  // Every wrong token compared spent a guess of its key.
  if (c.credential === 'wrong' && (answer.status === 401 || (whoAmI && answer.status === 200))) {
    const known = c.headers.some(([k, v]) => k === 'Cookie' && v === `xiaozhi_admin_client=${PLACEHOLDERS.known}`);
    const key = known ? 'known client' : c.from;
    const now = performance.now();
    const g = t.guesses.get(key) ?? { compared: 0, since: now };
    g.compared++;
    t.guesses.set(key, g);
    // The server's clock and this one differ by the round trips: a second of slack on the refill.
    const allowed = BURST + Math.floor(((now - g.since + 1000) / 60_000) * PER_MINUTE);
    assert.ok(
      g.compared <= allowed,
      `${what}: ${g.compared} wrong tokens compared for ${key} within ${((now - g.since) / 1000).toFixed(1)} s (budget ${allowed})`,
    );
  }

  t.health.assertHealthy(what);
  if (t.stats.cases % PROBE_EVERY === 0) await assertAdminServerUp(t, what);
}

/** The server answers /healthz, its data directory is bounded, and (with --expose-gc) its heap too. */
export async function assertAdminServerUp(t: AdminTarget, what: string): Promise<void> {
  const health = await fetch(`${t.app.httpUrl}/healthz`, { signal: AbortSignal.timeout(OTA_STEP_MS) });
  assert.equal(health.status, 200, `${what}: /healthz answered ${health.status}`);
  await health.arrayBuffer();
  const bytes = dirBytes(t.dataDir);
  t.stats.maxDataDirBytes = Math.max(t.stats.maxDataDirBytes, bytes);
  assert.ok(
    bytes <= DATA_DIR_LIMIT_BYTES,
    `${what}: the data directory holds ${bytes} bytes (limit ${DATA_DIR_LIMIT_BYTES})`,
  );
  const heap = heapAfterGc();
  if (heap !== undefined && t.stats.heapBefore !== undefined) {
    t.stats.heapGrowth = heap - t.stats.heapBefore;
    assert.ok(
      t.stats.heapGrowth <= HEAP_GROWTH_LIMIT_BYTES,
      `${what}: the heap grew by ${t.stats.heapGrowth} bytes (limit ${HEAP_GROWTH_LIMIT_BYTES})`,
    );
  }
}

export function describeAdminStats(t: AdminTarget): string {
  const statuses = [...t.stats.statuses]
    .sort(([a], [b]) => a - b)
    .map(([s, n]) => `${s}×${n}`)
    .join(' ');
  const guesses = [...t.guesses].map(([k, g]) => `${k} ${g.compared}`).join(', ');
  const heap = t.stats.heapGrowth !== undefined ? `, heap growth ${(t.stats.heapGrowth / 2 ** 20).toFixed(1)} MB` : '';
  return `admin: cases ${t.stats.cases}, answers ${statuses || 'none'}, wrong tokens compared ${guesses || 'none'}, crashes ${t.health.crashes.length}, error lines ${t.logs.errorCount()}, data dir max ${(t.stats.maxDataDirBytes / 1024).toFixed(1)} KB${heap}`;
}
