/**
 * The replicas stack's proxy for real: docker/replicas/nginx.conf, as shipped, in Debian's nginx
 * (only the upstream addresses and the listen address rewritten to loopback ports), in front of
 * two server replicas on one PostgreSQL configured by docker/replicas/server.yaml. nginx listens
 * on a port other than 80, as the stack does (8000): OTA must hand devices a WebSocket URL with
 * that port, and the browser page's OTA call and the console's sign-in (both checked against the
 * Host the proxy passes) must succeed; a device then connects through nginx, and the console's
 * sign-in holds for its next requests.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { DeviceSim } from '../../fixtures/device-sim.ts';
import { startFakeOpenAi, type FakeOpenAi } from '../../fixtures/fake-openai.ts';
import { startVoiceApp, type VoiceApp } from '../../helpers/voice-app.ts';
import { startPostgres, type TestPostgres } from '../../helpers/postgres.ts';
import { startNginx, type TestNginx } from '../../helpers/nginx.ts';
import { freePort } from './helpers/spawned-server.ts';

const ADMIN_TOKEN = 'a-long-admin-token-for-the-console';
const DEVICE = { 'Device-Id': 'e4:00:00:00:00:71', 'Client-Id': '0b9a3c1e-7d55-4e0f-9a51-2c4f1e9b7d71' };

/** The shipped file with the compose names replaced by loopback ports; fails if it no longer has them. */
function shippedNginxConf(replicaPorts: [number, number], listenPort: number): string {
  const shipped = readFileSync('docker/replicas/nginx.conf', 'utf8');
  const rewritten = shipped
    .replaceAll('server server-a:8000;', `server 127.0.0.1:${replicaPorts[0]};`)
    .replaceAll('server server-b:8000;', `server 127.0.0.1:${replicaPorts[1]};`)
    .replace(/listen 8000;/, `listen 127.0.0.1:${listenPort};`);
  for (const gone of ['server-a:8000', 'server-b:8000', 'listen 8000;'])
    assert.ok(!rewritten.includes(gone), `rewritten: ${gone}`);
  return rewritten;
}

describe('docker/replicas/nginx.conf in a real nginx, two replicas behind it', () => {
  let pg: TestPostgres;
  let llm: FakeOpenAi;
  let a: VoiceApp;
  let b: VoiceApp;
  let nginx: TestNginx;
  let base: string;
  before(async () => {
    pg = await startPostgres();
    const url = await pg.database();
    llm = await startFakeOpenAi();
    const shipped = parse(readFileSync('docker/replicas/server.yaml', 'utf8')) as {
      server: Record<string, unknown>;
    } & Record<string, unknown>;
    const config = {
      ...shipped,
      // Here nginx reaches the replicas over loopback, not a compose network.
      server: { ...shipped.server, trustProxy: ['127.0.0.1/32'] },
      store: { url },
      admin: { token: ADMIN_TOKEN },
    };
    [a, b] = await Promise.all([startVoiceApp(llm.url, config), startVoiceApp(llm.url, config)]);
    const port = await freePort();
    nginx = await startNginx(
      shippedNginxConf([Number(new URL(a.httpUrl).port), Number(new URL(b.httpUrl).port)], port),
      port,
    );
    base = `http://127.0.0.1:${port}`;
  });
  after(async () => {
    await nginx?.stop();
    await a?.close();
    await b?.close();
    await llm?.close();
    await pg?.stop();
  });

  const ota = (headers: Record<string, string>): Promise<Response> =>
    fetch(`${base}/xiaozhi/ota/`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...DEVICE, ...headers },
      body: '{}',
    });

  test("OTA hands devices the WebSocket URL with the proxy's port, and a device connects through it", async () => {
    const res = await ota({});
    assert.equal(res.status, 200);
    const first = (await res.json()) as { websocket: { url: string }; activation?: { code: string } };
    assert.equal(first.websocket.url, `ws://127.0.0.1:${new URL(base).port}/xiaozhi/v1/`, 'the port the device used');
    const code = first.activation?.code ?? '';
    assert.equal((await a.app.devices?.bind(code))?.ok, true);
    const bound = (await (await ota({})).json()) as { websocket: { url: string; token?: string } };
    assert.ok(bound.websocket.token, 'bound: a token');
    const dev = new DeviceSim({
      url: bound.websocket.url,
      deviceId: DEVICE['Device-Id'],
      clientId: DEVICE['Client-Id'],
      token: bound.websocket.token,
    });
    try {
      await dev.hello();
      assert.equal(dev.closeCode, null);
    } finally {
      dev.close();
    }
  });

  test("the page's OTA call (a browser request from the page's own origin) succeeds", async () => {
    // What the browser sends with the page's fetch: its own origin, host and port.
    const res = await ota({ Origin: base, 'Device-Id': 'e4:00:00:00:00:72', 'Client-Id': 'browser-page' });
    const text = await res.text();
    assert.equal(res.status, 200, text);
    const body = JSON.parse(text) as { websocket: { url: string } };
    assert.equal(new URL(body.websocket.url).port, new URL(base).port);
  });

  test('the console signs in through the proxy and stays signed in', async () => {
    const res = await fetch(`${base}/api/admin/session`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Origin: base },
      body: JSON.stringify({ token: ADMIN_TOKEN }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    // The console's cookies (its session, and the known-client mark), as a browser sends them back.
    const cookies = res.headers.getSetCookie();
    assert.ok(cookies.length > 0 && cookies.every((c) => /HttpOnly/i.test(c)), cookies.join(' | '));
    const cookie = cookies.map((c) => c.split(';')[0]).join('; ');
    // The cookie then works for the console's next requests (the sign-in is in one replica's
    // memory: the proxy must keep sending this browser there).
    for (let i = 0; i < 4; i++) {
      const who = await fetch(`${base}/api/admin/session`, { headers: { Cookie: cookie, Origin: base } });
      assert.deepEqual(await who.json(), { signedIn: true }, `cookie: ${cookie}`);
    }
  });
});
