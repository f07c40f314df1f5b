/**
 * The admin API on the real app (real HTTP on loopback, the real SQLite store in a temp data
 * directory, a real OTA request for the pending device, a real device WebSocket for the revoke):
 * off without a token, 401 without credentials, 403 from a foreign origin, 400 naming the field,
 * the bind / move / revoke / agent CRUD flow, API keys never returned nor logged, the console's
 * cookie and its sign-in limit, and the OpenAPI document matching the routes served.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp, type App } from '../../../server/app.ts';
import { ConfigSchema } from '../../../server/config.ts';
import { createLogger } from '../../../server/logger.ts';
import { SecretValues } from '../../../core/secret-values.ts';
import { registerConfigSecrets } from '../../../core/config-secrets.ts';
import { ADMIN_ROUTES } from '../../../features/admin/routes.ts';
import { jsonSchema } from '../../../features/admin/openapi.ts';
import { fastifyPath } from '../../../features/admin/route.ts';
import { defaultReplicaId } from '../../../store/store.ts';
import { DeviceSim } from '../../fixtures/device-sim.ts';
import { recordingConversation } from '../../helpers/recording-conversation.ts';
import { createLogSink, type LogSink } from '../../helpers/log-sink.ts';
import { listenOnLoopback } from '../../helpers/listen.ts';
import { LOOPBACK_CLIENTS } from '../../helpers/test-app.ts';
import { waitFor } from '../../helpers/wait.ts';

const TOKEN = 'admin-token-for-tests-0123456789';
const AGENT_KEY = 'sk-agent-key-never-shown-4242';
const DEVICE = { 'Device-Id': 'e4:00:00:00:00:21', 'Client-Id': '7c1d2e3f-0000-4000-8000-000000000021' };
const BODY = JSON.stringify({
  version: 2,
  mac_address: DEVICE['Device-Id'],
  uuid: DEVICE['Client-Id'],
  board: { type: 'bread-compact-wifi' },
  application: { name: 'xiaozhi', version: '2.4.2' },
});

interface Server {
  app: App;
  url: string;
  logs: LogSink;
  close(): Promise<void>;
}

async function start(dir: string, admin: Record<string, unknown>): Promise<Server> {
  const config = ConfigSchema.parse({
    admin,
    server: { ...LOOPBACK_CLIENTS, dataDir: dir, auth: { mode: 'activation' } },
  });
  const logs = createLogSink();
  const secrets = new SecretValues();
  registerConfigSecrets(secrets, config);
  const log = createLogger({ level: 'debug', logContent: false, destination: logs.stream, secrets });
  const app = await buildApp({
    config,
    log,
    createConversation: recordingConversation().factory,
    onSecret: (v) => secrets.add(v),
  });
  const { httpUrl } = await listenOnLoopback(app);
  return { app, url: httpUrl, logs, close: () => app.fastify.close() };
}

/** `METHOD /path` of every route in Fastify's printed route tree (each level indented 4 characters), HEAD left out. */
function servedRoutes(tree: string): string[] {
  const stack: string[] = [];
  const out: string[] = [];
  for (const line of tree.split('\n')) {
    const m = /^([│ ]*)[├└]── (\S+)(?: \(([^)]+)\))?/.exec(line);
    if (!m) continue;
    const depth = (m[1] ?? '').length / 4;
    const path = (stack[depth - 1] ?? '') + (m[2] ?? '');
    stack[depth] = path;
    stack.length = depth + 1;
    for (const method of m[3]?.split(', ') ?? []) if (method !== 'HEAD') out.push(`${method} ${path}`);
  }
  return out;
}

describe('admin API', () => {
  let dir: string;
  let s: Server;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'admin-api-'));
    s = await start(dir, { token: TOKEN });
  });
  after(async () => {
    await s?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const call = async (
    method: string,
    path: string,
    opts: { body?: unknown; headers?: Record<string, string>; token?: string | null } = {},
  ) => {
    const headers: Record<string, string> = { ...(opts.headers ?? {}) };
    if (opts.token !== null) headers.authorization = `Bearer ${opts.token ?? TOKEN}`;
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${s.url}/api/admin${path}`, {
      method,
      headers,
      ...(opts.body !== undefined
        ? { body: typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body) }
        : {}),
    });
    const text = await res.text();
    return {
      status: res.status,
      headers: res.headers,
      text,
      json: text ? (JSON.parse(text) as Record<string, unknown>) : null,
    };
  };
  const ota = async (): Promise<{ activation?: { code: string }; websocket: { url: string; token?: string } }> => {
    const res = await fetch(`${s.url}/xiaozhi/ota/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...DEVICE },
      body: BODY,
    });
    assert.equal(res.status, 200);
    return (await res.json()) as { activation?: { code: string }; websocket: { url: string; token?: string } };
  };
  type Dev = {
    deviceId: string;
    state: string;
    code: string | null;
    agent: string | null;
    alias: string | null;
    online: boolean;
    board: string | null;
    firmware: string | null;
    lastSeen: string | null;
  };
  const devices = async (): Promise<Dev[]> => (await call('GET', '/devices')).json?.devices as Dev[];

  test('401 without the token or with a wrong one, and from a signed-out cookie', async () => {
    for (const token of [null, 'wrong-token-wrong-token-wrong']) {
      const r = await call('GET', '/devices', { token });
      assert.equal(r.status, 401);
      assert.match(r.headers.get('www-authenticate') ?? '', /^Bearer/);
      assert.equal(typeof r.json?.error, 'string');
    }
    assert.equal(
      (await call('GET', '/devices', { token: null, headers: { cookie: 'xiaozhi_admin=forged' } })).status,
      401,
    );
    assert.equal((await call('GET', '/devices')).status, 200);
  });

  test('403 from a foreign origin, even with the token; the console origin is accepted', async () => {
    const foreign = await call('GET', '/devices', { headers: { origin: 'https://evil.example' } });
    assert.equal(foreign.status, 403);
    assert.equal(
      (
        await call('POST', '/session', {
          token: null,
          body: { token: TOKEN },
          headers: { origin: 'https://evil.example' },
        })
      ).status,
      403,
    );
    const own = await call('GET', '/devices', { headers: { origin: s.url } });
    assert.equal(own.status, 200);
  });

  test('400 names the field at fault', async () => {
    const cases: Array<[string, string, unknown, string]> = [
      ['POST', '/devices/bind', { code: '12' }, 'body.code'],
      ['POST', '/devices/bind', { code: '123456', agent: 'no such/agent' }, 'body.agent'],
      ['POST', '/devices/bind', { code: '123456', agent: 'nobody' }, 'body.agent'],
      ['POST', '/devices/bind', { code: '123456', extra: 1 }, 'body'],
      ['PATCH', '/devices/not-a-mac', { alias: 'x' }, 'params.deviceId'],
      ['PATCH', `/devices/${DEVICE['Device-Id']}`, { agent: 'nobody' }, 'body.agent'],
      ['POST', '/agents', { name: 'bad name' }, 'body.name'],
      ['POST', '/agents', { name: 'ok', settings: { language: 'fr' } }, 'body.settings.language'],
      ['POST', '/agents', { name: 'ok', settings: { llm: { temperature: 5 } } }, 'body.settings.llm.temperature'],
    ];
    for (const [method, path, body, field] of cases) {
      const r = await call(method, path, { body });
      assert.equal(r.status, 400, `${method} ${path} ${JSON.stringify(body)}: ${r.text}`);
      assert.equal(r.json?.field, field, `${method} ${path} ${JSON.stringify(body)}`);
      assert.ok(String(r.json?.error).startsWith(field), `the message names ${field}: ${String(r.json?.error)}`);
    }
    const notJson = await call('POST', '/agents', { body: '{"name":' });
    assert.equal(notJson.status, 400);
  });

  test('agents: create, read, patch (merge), list, delete; the API key is never returned nor logged', async () => {
    const created = await call('POST', '/agents', {
      body: {
        name: 'kitchen',
        settings: { systemPrompt: 'You are a cook.', language: 'en', llm: { model: 'chef-1', apiKey: AGENT_KEY } },
      },
    });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.json?.apiKeySet, true);
    assert.equal(created.text.includes(AGENT_KEY), false);
    assert.equal((await call('POST', '/agents', { body: { name: 'kitchen' } })).status, 409);

    const patched = await call('PATCH', '/agents/kitchen', {
      body: {
        settings: { systemPrompt: 'You are a baker.', llm: { model: 'chef-2' }, greeting: 'Hello from the oven.' },
      },
    });
    assert.equal(patched.status, 200, patched.text);
    const settings = patched.json?.settings as Record<string, unknown>;
    assert.equal(settings.systemPrompt, 'You are a baker.');
    assert.deepEqual(settings.llm, { model: 'chef-2' });
    assert.equal(settings.language, 'en', 'keys absent from the patch are kept');
    assert.equal(patched.json?.apiKeySet, true, 'the key survives a model change');
    const stored = await s.app.store.agents.get('kitchen');
    assert.equal((stored?.settings.llm as Record<string, unknown>).apiKey, AGENT_KEY, 'stored, only never shown');

    const removed = await call('PATCH', '/agents/kitchen', { body: { settings: { greeting: null } } });
    assert.equal((removed.json?.settings as Record<string, unknown>).greeting, undefined);
    const badMerge = await call('PATCH', '/agents/kitchen', { body: { settings: { tts: { provider: 'openai' } } } });
    assert.equal(badMerge.status, 400);
    assert.match(String(badMerge.json?.field), /^body\.settings\.tts/);

    const got = await call('GET', '/agents/kitchen');
    assert.equal(got.status, 200);
    assert.equal(got.text.includes(AGENT_KEY), false);
    const list = await call('GET', '/agents');
    assert.deepEqual(
      (list.json?.agents as Array<{ name: string }>).map((a) => a.name),
      ['kitchen'],
    );
    assert.equal(list.text.includes(AGENT_KEY), false);
    assert.equal((await call('GET', '/agents/nobody')).status, 404);
    assert.equal((await call('PATCH', '/agents/nobody', { body: { settings: {} } })).status, 404);

    // Registered for redaction by value: a line that echoes it (an LLM error would) is cleaned.
    s.app.fastify.log.warn({ echo: `key=${AGENT_KEY}`, header: `Bearer ${TOKEN}` }, 'provider said');
    assert.ok(s.logs.find('provider said').length === 1);
    assert.equal(s.logs.text().includes(AGENT_KEY), false);
    assert.equal(s.logs.text().includes(TOKEN), false);

    assert.equal(
      (await call('POST', '/agents', { body: { name: 'bedroom', settings: { systemPrompt: 'Speak softly.' } } }))
        .status,
      201,
    );
  });

  test('a pending device is bound to an agent, moved, renamed, revoked (its session ends)', async () => {
    const first = await ota();
    const code = first.activation?.code ?? '';
    assert.match(code, /^\d{6}$/);
    const pending = (await devices()).find((d) => d.deviceId === DEVICE['Device-Id']);
    assert.equal(pending?.state, 'pending');
    assert.equal(pending?.code, code);
    assert.equal(pending?.board, 'bread-compact-wifi');
    assert.equal(pending?.firmware, '2.4.2');
    assert.ok(pending?.lastSeen);

    assert.equal(
      (await call('POST', '/devices/bind', { body: { code: '000000' === code ? '999999' : '000000' } })).status,
      404,
    );
    const bound = await call('POST', '/devices/bind', {
      body: { code: `${code.slice(0, 3)} ${code.slice(3)}`, agent: 'kitchen', alias: 'Kitchen speaker' },
    });
    assert.equal(bound.status, 201, bound.text);
    assert.equal(bound.json?.state, 'bound');
    assert.equal(bound.json?.agent, 'kitchen');
    assert.equal(bound.json?.alias, 'Kitchen speaker');
    assert.equal((await s.app.store.devices.get(DEVICE['Device-Id']))?.agent, 'kitchen');

    const moved = await call('PATCH', `/devices/${DEVICE['Device-Id'].toUpperCase()}`, {
      body: { agent: 'bedroom', alias: 'Bedside' },
    });
    assert.equal(moved.status, 200, moved.text);
    assert.equal(moved.json?.agent, 'bedroom');
    assert.equal(moved.json?.alias, 'Bedside');
    const back = await call('PATCH', `/devices/${encodeURIComponent(DEVICE['Device-Id'])}`, { body: { agent: null } });
    assert.equal(back.json?.agent, null, 'null: the default agent');
    await call('PATCH', `/devices/${DEVICE['Device-Id']}`, { body: { agent: 'bedroom' } });
    assert.equal((await call('PATCH', '/devices/e4:00:00:00:00:99', { body: { alias: 'x' } })).status, 404);

    // A real session of the device: online while it lasts, closed by the revoke.
    const token = (await ota()).websocket.token ?? '';
    const dev = new DeviceSim({
      url: `${s.url.replace('http', 'ws')}/xiaozhi/v1/`,
      deviceId: DEVICE['Device-Id'],
      clientId: DEVICE['Client-Id'],
      token,
    });
    try {
      await dev.hello();
      assert.equal((await devices()).find((d) => d.deviceId === DEVICE['Device-Id'])?.online, true);
      // The server records its own sessions in the store: listed with agent and replica.
      const listed = async (): Promise<Array<Record<string, unknown>>> =>
        ((await call('GET', '/sessions')).json?.sessions as Array<Record<string, unknown>>).filter(
          (x) => x.deviceId === DEVICE['Device-Id'],
        );
      await waitFor(async () => (await listed()).length === 1, { what: 'the session recorded in the store' });
      const [live] = await listed();
      assert.equal(live?.agent, 'bedroom');
      assert.equal(live?.replica, s.app.store.replica);
      assert.equal(live?.clientId, DEVICE['Client-Id']);
      const revoked = await call('DELETE', `/devices/${DEVICE['Device-Id']}`);
      assert.equal(revoked.status, 200, revoked.text);
      assert.equal(await dev.closed, 4005, 'the revoked device is disconnected');
      await waitFor(async () => (await listed()).length === 0, { what: 'the ended session gone from the store' });
    } finally {
      dev.close();
    }
    assert.equal((await call('DELETE', `/devices/${DEVICE['Device-Id']}`)).status, 404, 'no longer bound');
    assert.notEqual((await devices()).find((d) => d.deviceId === DEVICE['Device-Id'])?.state, 'bound');

    // Deleting its agent sends a device back to the default agent.
    assert.equal((await call('DELETE', '/agents/bedroom')).status, 204);
    assert.equal((await call('DELETE', '/agents/bedroom')).status, 404);
    assert.equal((await devices()).find((d) => d.deviceId === DEVICE['Device-Id'])?.agent, null);
  });

  test('the console is served at /admin with a CSP that allows no eval and no inline code', async () => {
    const redirect = await fetch(`${s.url}/admin`, { redirect: 'manual' });
    await redirect.arrayBuffer();
    assert.equal(redirect.status, 301);
    assert.equal(redirect.headers.get('location'), '/admin/');
    for (const path of ['/admin/', '/admin/admin.css', '/admin/js/main.js', '/admin/js/api.js']) {
      const res = await fetch(`${s.url}${path}`);
      await res.arrayBuffer();
      assert.equal(res.status, 200, path);
      assert.equal(res.headers.get('x-frame-options'), 'DENY');
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
      const csp = new Map(
        (res.headers.get('content-security-policy') ?? '')
          .split(';')
          .map((d) => d.trim().split(/\s+/))
          .map((p) => [p[0], p.slice(1)]),
      );
      assert.deepEqual(csp.get('script-src'), ["'self'"], path);
      assert.deepEqual(csp.get('connect-src'), ["'self'"], path);
      assert.deepEqual(csp.get('frame-ancestors'), ["'none'"], path);
      for (const [name, sources] of csp)
        assert.ok(!sources?.includes("'unsafe-inline'") && !sources?.includes("'unsafe-eval'"), `${path} ${name}`);
    }
  });

  test('live sessions: the rows in the store (every replica writes its own), with device, agent, replica and since', async () => {
    const row = {
      sessionId: 's-stored-row-1',
      deviceId: 'e4:00:00:00:00:77',
      clientId: 'c-77',
      agent: 'kitchen',
      replica: defaultReplicaId(),
      since: new Date().toISOString(),
    };
    await s.app.store.sessions.add(row);
    try {
      const r = await call('GET', '/sessions');
      assert.equal(r.status, 200);
      assert.deepEqual(
        (r.json?.sessions as Array<Record<string, unknown>>).find((x) => x.sessionId === row.sessionId),
        row,
      );
      await s.app.store.devices.seen({ deviceId: row.deviceId, clientId: row.clientId });
      assert.equal(
        (await devices()).find((d) => d.deviceId === row.deviceId)?.online,
        true,
        'online: a session row in the store, not one of this process',
      );
    } finally {
      await s.app.store.sessions.remove(row.sessionId);
    }
  });

  test('the console cookie: HttpOnly, SameSite=Strict; changes need the same origin; sign-out ends it', async () => {
    const signIn = await call('POST', '/session', { token: null, body: { token: TOKEN }, headers: { origin: s.url } });
    assert.equal(signIn.status, 200, signIn.text);
    // The session cookie (beside it, the known-client cookie: its own test below).
    const set = signIn.headers.getSetCookie().find((c) => c.startsWith('xiaozhi_admin=')) ?? '';
    const parts = set.split('; ');
    assert.match(parts[0] ?? '', /^xiaozhi_admin=[A-Za-z0-9_-]{43}$/);
    for (const attr of ['HttpOnly', 'SameSite=Strict', 'Path=/']) assert.ok(parts.includes(attr), `${attr} in ${set}`);
    assert.equal(parts.includes('Secure'), false, 'plain http: not Secure');
    assert.equal(set.includes(TOKEN), false);
    const cookie = parts[0] ?? '';

    assert.equal((await call('GET', '/devices', { token: null, headers: { cookie } })).status, 200);
    const noOrigin = await call('POST', '/agents', { token: null, headers: { cookie }, body: { name: 'via-cookie' } });
    assert.equal(noOrigin.status, 403, 'a cookie change without Origin is refused');
    const sameOrigin = await call('POST', '/agents', {
      token: null,
      headers: { cookie, origin: s.url },
      body: { name: 'via-cookie' },
    });
    assert.equal(sameOrigin.status, 201, sameOrigin.text);

    const overHttps = await call('POST', '/session', {
      token: null,
      body: { token: TOKEN },
      headers: { 'x-forwarded-proto': 'https' },
    });
    assert.ok(
      overHttps.headers.getSetCookie().every((c) => c.split('; ').includes('Secure')),
      'Secure when the console came over https',
    );

    const out = await call('DELETE', '/session', { token: null, headers: { cookie, origin: s.url } });
    assert.equal(out.status, 204);
    assert.match(out.headers.get('set-cookie') ?? '', /Max-Age=0/);
    assert.equal(
      (await call('GET', '/devices', { token: null, headers: { cookie } })).status,
      401,
      'the session ended on the server',
    );
  });

  test('the OpenAPI document needs the token too, and the README says so where it names it', async () => {
    assert.equal((await call('GET', '/openapi.json', { token: null })).status, 401);
    const readme = readFileSync('README.md', 'utf8');
    // The paragraph (blank-line separated) that names the document's path.
    const paragraph = readme.split(/\n\s*\n/).find((p) => p.includes('/api/admin/openapi.json')) ?? '';
    assert.match(paragraph, /openapi\.json[^.]*\b(needs|requires|with) the (admin )?token/i, paragraph);
  });

  test('the OpenAPI document lists every admin route served, with the schemas that validate them', async () => {
    const r = await call('GET', '/openapi.json');
    assert.equal(r.status, 200);
    const doc = r.json as {
      openapi: string;
      paths: Record<
        string,
        Record<
          string,
          {
            requestBody?: { content: Record<string, { schema: unknown }> };
            parameters?: Array<{ name: string; schema: unknown }>;
          }
        >
      >;
    };
    assert.equal(doc.openapi, '3.1.0');
    // Every route Fastify serves under /api/admin is documented, and every documented one is served.
    const served = new Set(
      servedRoutes(s.app.fastify.printRoutes({ commonPrefix: false })).filter((r) => / \/api\/admin\//.test(r)),
    );
    const documented = new Set(
      Object.entries(doc.paths).flatMap(([p, ops]) =>
        Object.keys(ops).map((m) => `${m.toUpperCase()} ${fastifyPath(p)}`),
      ),
    );
    assert.deepEqual([...served].sort(), [...documented].sort());
    assert.ok(served.size >= 14, `${served.size} routes`);
    for (const route of ADMIN_ROUTES) {
      const op = doc.paths[`/api/admin${route.path}`]?.[route.method.toLowerCase()];
      assert.ok(op, `${route.method} ${route.path} documented`);
      if (route.body)
        assert.deepEqual(
          op.requestBody?.content['application/json']?.schema,
          jsonSchema(route.body, 'input'),
          `${route.id}: the body schema`,
        );
      else assert.equal(op.requestBody, undefined);
      if (route.params) {
        const props = jsonSchema(route.params, 'input').properties as Record<string, unknown>;
        assert.deepEqual(
          Object.fromEntries((op.parameters ?? []).map((p) => [p.name, p.schema])),
          props,
          `${route.id}: the params`,
        );
      }
    }
    // What the document says is enforced: the bodies are closed objects, and an extra field is refused.
    for (const route of ADMIN_ROUTES.filter((x) => x.body && x.auth)) {
      const path = route.path.replace('{deviceId}', DEVICE['Device-Id']).replace('{name}', 'kitchen');
      const res = await call(route.method, path, { body: { unexpectedField: 1 } });
      assert.equal(res.status, 400, `${route.id}: ${res.text}`);
      assert.match(String(res.json?.error), /unexpectedField|expected/, route.id);
    }
  });

  test('sign-in attempts are limited per address: 5 a minute, then 429 even with the right token', async () => {
    // Earlier tests signed in and sent wrong bearer tokens from this address, spending the same
    // attempts: at most four are left (one more if the bucket refilled meanwhile, one every 12 s).
    const statuses: number[] = [];
    while (statuses.length < 8 && statuses.at(-1) !== 429)
      statuses.push(
        (await call('POST', '/session', { token: null, body: { token: 'wrong-token-wrong-token' } })).status,
      );
    assert.equal(statuses.at(-1), 429, `statuses: ${statuses.join(',')}`);
    assert.ok(statuses.slice(0, -1).every((x) => x === 401));
    assert.ok(statuses.length - 1 <= 4, `at most 5 attempts a minute: ${statuses.join(',')}`);
    const limited = await call('POST', '/session', { token: null, body: { token: TOKEN } });
    assert.equal(limited.status, 429);
    assert.equal(limited.headers.get('retry-after'), '12');
    assert.ok(s.logs.find('admin: wrong admin tokens over the limit').length > 0);
  });
});

describe('admin API: guessing the token as a bearer', () => {
  test('wrong bearer tokens spend the sign-in budget of the address: then 429, even with the right token', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'admin-bearer-'));
    const s = await start(dir, { token: TOKEN });
    try {
      const get = async (token: string) =>
        (await fetch(`${s.url}/api/admin/devices`, { headers: { authorization: `Bearer ${token}` } })).status;
      const statuses: number[] = [];
      while (statuses.length < 10 && statuses.at(-1) !== 429) statuses.push(await get('wrong-token-wrong-token-wrong'));
      assert.equal(statuses.at(-1), 429, `statuses: ${statuses.join(',')}`);
      assert.ok(
        statuses.length - 1 <= 6,
        `at most 5 guesses a minute (one more if the bucket refilled): ${statuses.join(',')}`,
      );
      assert.equal(
        await get(TOKEN),
        429,
        'a guess that happens to be right is not told apart while the address is over the limit',
      );
    } finally {
      await s.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('GET /session checks a bearer token like every route: wrong ones spend the same budget, then 429 there and everywhere, even for the right one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'admin-bearer-'));
    const s = await start(dir, { token: TOKEN });
    try {
      const get = async (path: string, token: string) =>
        (await fetch(`${s.url}/api/admin${path}`, { headers: { authorization: `Bearer ${token}` } })).status;
      // Guesses alternate between the whoAmI oracle and an ordinary route: one budget.
      const statuses: number[] = [];
      while (statuses.length < 12 && statuses.at(-1) !== 429)
        statuses.push(
          await get(statuses.length % 2 ? '/devices' : '/session', `wrong-token-wrong-token-${statuses.length}`),
        );
      assert.equal(statuses.at(-1), 429, `statuses: ${statuses.join(',')}`);
      assert.ok(
        statuses.length - 1 <= 6,
        `at most 5 guesses a minute (one more if the bucket refilled): ${statuses.join(',')}`,
      );
      assert.ok(
        statuses.slice(0, -1).every((x, i) => x === (i % 2 ? 401 : 200)),
        `wrong guesses: 200 {signedIn:false} on /session, 401 elsewhere: ${statuses.join(',')}`,
      );
      assert.equal(
        await get('/session', TOKEN),
        429,
        'whoAmI does not tell the right token apart while the address is over its budget',
      );
      assert.equal(await get('/devices', TOKEN), 429);
      // A wrong guess at GET /session answers signedIn false, as before.
      const other = await start(mkdtempSync(join(tmpdir(), 'admin-bearer-')), { token: TOKEN });
      try {
        const r = await fetch(`${other.url}/api/admin/session`, {
          headers: { authorization: 'Bearer wrong-token-wrong-token' },
        });
        assert.deepEqual(await r.json(), { signedIn: false });
      } finally {
        await other.close();
      }
    } finally {
      await s.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a client that proved the token before keeps its own budget: strangers guessing from its address do not lock it out', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'admin-bearer-'));
    const s = await start(dir, { token: TOKEN });
    try {
      const req = async (method: string, path: string, headers: Record<string, string>, body?: unknown) => {
        const res = await fetch(`${s.url}/api/admin${path}`, {
          method,
          headers: { ...headers, ...(body ? { 'content-type': 'application/json' } : {}) },
          ...(body ? { body: JSON.stringify(body) } : {}),
        });
        await res.arrayBuffer();
        return res;
      };
      // The operator signs in once from this browser: besides the session, a known-client cookie.
      const signIn = await req('POST', '/session', { origin: s.url }, { token: TOKEN });
      assert.equal(signIn.status, 200);
      const known = signIn.headers.getSetCookie().find((c) => c.startsWith('xiaozhi_admin_client='));
      assert.ok(known, `Set-Cookie: ${signIn.headers.getSetCookie().join(' | ')}`);
      assert.match(known, /HttpOnly/);
      assert.match(known, /SameSite=Strict/);
      assert.match(known, /Max-Age=\d+/);
      const client = known.split(';')[0] as string;

      // A stranger behind the same address (a NAT) spends the address's budget.
      const statuses: number[] = [];
      while (statuses.length < 10 && statuses.at(-1) !== 429)
        statuses.push(
          (await req('GET', '/devices', { authorization: `Bearer wrong-token-wrong-token-${statuses.length}` })).status,
        );
      assert.equal(statuses.at(-1), 429, statuses.join(','));
      assert.equal(
        (await req('POST', '/session', { origin: s.url }, { token: TOKEN })).status,
        429,
        'without the cookie the right token is not told apart',
      );
      assert.equal(
        (
          await req('GET', '/devices', {
            authorization: `Bearer ${TOKEN}`,
            cookie: 'xiaozhi_admin_client=forged.forged',
          })
        ).status,
        429,
        'a forged cookie is no cookie',
      );

      // The known client still signs in, and uses the token as a bearer.
      assert.equal((await req('POST', '/session', { origin: s.url, cookie: client }, { token: TOKEN })).status, 200);
      assert.equal((await req('GET', '/devices', { authorization: `Bearer ${TOKEN}`, cookie: client })).status, 200);
      // Its own wrong guesses are limited too: its own budget.
      const own: number[] = [];
      while (own.length < 10 && own.at(-1) !== 429)
        own.push(
          (
            await req('GET', '/devices', {
              authorization: `Bearer wrong-token-wrong-token-${own.length}`,
              cookie: client,
            })
          ).status,
        );
      assert.equal(own.at(-1), 429, own.join(','));
      assert.ok(own.length - 1 <= 6, own.join(','));
    } finally {
      await s.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('the right bearer token is not limited', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'admin-bearer-'));
    const s = await start(dir, { token: TOKEN });
    try {
      for (let i = 0; i < 12; i++) {
        const r = await fetch(`${s.url}/api/admin/devices`, { headers: { authorization: `Bearer ${TOKEN}` } });
        assert.equal(r.status, 200, `request ${i}`);
      }
    } finally {
      await s.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('admin API without a token', () => {
  test('the API and the console are off (404) and the log says how to turn them on', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'admin-off-'));
    const s = await start(dir, {});
    try {
      for (const path of ['/api/admin/devices', '/api/admin/openapi.json', '/admin/', '/admin/js/main.js']) {
        const res = await fetch(`${s.url}${path}`, { headers: { authorization: 'Bearer anything-at-all-0000' } });
        await res.arrayBuffer();
        assert.equal(res.status, 404, path);
      }
      assert.ok(
        s.logs.lines.some((l) => /admin API and console off: set admin\.token \(env ADMIN_TOKEN/.test(String(l.msg))),
      );
    } finally {
      await s.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
