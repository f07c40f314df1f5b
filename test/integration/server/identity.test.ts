/**
 * Device identity and origins against the real server on loopback:
 * what OTA hands to a stranger in each auth mode, cross-origin reads, activation by code, per-device
 * tokens, who may replace a session, and long tokens.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeviceSim } from '../../fixtures/device-sim.ts';
import { recordingConversation } from '../../helpers/recording-conversation.ts';
import { startTestApp, type TestApp } from '../../helpers/test-app.ts';
import { buildApp } from '../../../server/app.ts';
import { ConfigSchema, loadConfig } from '../../../server/config.ts';
import { createLogger } from '../../../server/logger.ts';
import { createLogSink } from '../../helpers/log-sink.ts';
import { listenOnLoopback } from '../../helpers/listen.ts';
import { postTo as post, upgradeTo as upgrade } from '../../helpers/http-probe.ts';
import { openStore } from '../../../store/store.ts';
import { silentLogger } from '../../../core/logger.ts';

const FIRMWARE = { 'Content-Type': 'application/json', 'Activation-Version': '1' };

describe('OTA gives no credential to a stranger', () => {
  test('tokens mode: OTA never hands out a token, to anyone', async () => {
    const t = await startTestApp({
      createConversation: recordingConversation().factory,
      config: { server: { auth: { mode: 'tokens', tokens: ['static-secret-1'] } } },
    });
    try {
      for (const headers of [{}, { 'Device-Id': 'aa:bb:cc:00:00:01', 'Client-Id': 'c1' }] as Array<
        Record<string, string>
      >) {
        const res = await post(t.port, '/xiaozhi/ota/', { ...FIRMWARE, ...headers });
        assert.equal(res.status, 200);
        const body = JSON.parse(res.body) as { websocket: Record<string, unknown> };
        assert.equal('token' in body.websocket, false, res.body);
        assert.equal(res.body.includes('static-secret-1'), false);
      }
    } finally {
      await t.close();
    }
  });

  test('tokens listed without a mode means tokens mode (an existing config keeps its protection)', async () => {
    const t = await startTestApp({
      createConversation: recordingConversation().factory,
      config: { server: { auth: { tokens: ['tok-legacy'] } } },
    });
    try {
      const res = await post(t.port, '/xiaozhi/ota/', FIRMWARE);
      assert.equal(res.body.includes('tok-legacy'), false);
      assert.equal((await upgrade(t.port, { 'Device-Id': 'aa:bb:cc:00:00:01' })).status, 401);
      assert.equal(
        (await upgrade(t.port, { 'Device-Id': 'aa:bb:cc:00:00:01', Authorization: 'Bearer tok-legacy' })).status,
        101,
      );
    } finally {
      await t.close();
    }
  });

  describe('origins', () => {
    let t: TestApp;
    before(async () => {
      t = await startTestApp({
        createConversation: recordingConversation().factory,
        config: { server: { allowedOrigins: ['https://console.example.org'] } },
      });
    });
    after(() => t.close());

    test('a cross-origin page cannot read the OTA answer (refused, no CORS grant)', async () => {
      const res = await post(t.port, '/xiaozhi/ota/', { ...FIRMWARE, Origin: 'https://evil.example' });
      assert.equal(res.status, 403);
      assert.equal(res.headers['access-control-allow-origin'], undefined);
      assert.equal(res.body.includes('websocket'), false);
    });

    test('the server own page and configured origins may; devices send no Origin and are unaffected', async () => {
      const own = await post(t.port, '/xiaozhi/ota/', { ...FIRMWARE, Origin: `http://127.0.0.1:${t.port}` });
      assert.equal(own.status, 200);
      assert.equal(own.headers['access-control-allow-origin'], `http://127.0.0.1:${t.port}`);
      const listed = await post(t.port, '/xiaozhi/ota/', { ...FIRMWARE, Origin: 'https://console.example.org' });
      assert.equal(listed.status, 200);
      assert.equal(listed.headers['access-control-allow-origin'], 'https://console.example.org');
      const device = await post(t.port, '/xiaozhi/ota/', FIRMWARE);
      assert.equal(device.status, 200);
      assert.equal(device.headers['access-control-allow-origin'], undefined);
    });

    test('a cross-origin page cannot open the WebSocket', async () => {
      assert.equal(
        (await upgrade(t.port, { Origin: 'https://evil.example' }, '?device-id=aa:bb:cc:00:00:05')).status,
        403,
      );
      assert.equal(
        (await upgrade(t.port, { Origin: `http://127.0.0.1:${t.port}` }, '?device-id=aa:bb:cc:00:00:05')).status,
        101,
      );
      assert.equal((await upgrade(t.port, { 'Device-Id': 'aa:bb:cc:00:00:06' })).status, 101);
    });
  });
});

describe('activation mode', () => {
  let t: TestApp;
  let dir: string;
  const pair = { 'Device-Id': 'a0:b1:c2:d3:e4:f5', 'Client-Id': '6f1c1d2e-1111-4222-8333-444455556666' };
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'identity-'));
    t = await startTestApp({
      createConversation: recordingConversation().factory,
      config: { server: { dataDir: dir, auth: { mode: 'activation' } } },
    });
  });
  after(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a stranger gets a spoken code and a token that opens nothing; /activate answers 202 until bound', async () => {
    const bare = await post(t.port, '/xiaozhi/ota/', FIRMWARE);
    assert.equal(bare.status, 503, 'no identity: no code and no credential');
    assert.equal(bare.body.includes('token'), false);
    const res = await post(t.port, '/xiaozhi/ota/', { ...FIRMWARE, ...pair });
    assert.equal(res.status, 200);
    const body = JSON.parse(res.body) as {
      websocket: { token?: string };
      activation?: { code: string; message: string; challenge: string };
    };
    const token = body.websocket.token ?? '';
    assert.ok(token.length >= 40, "the pair's own token, for use once bound");
    assert.match(body.activation?.code ?? '', /^\d{6}$/);
    assert.equal(body.activation?.challenge, pair['Device-Id']);
    assert.ok(body.activation?.message.includes(body.activation.code));
    // Asking again gives the same code (the device repeats OTA after each activate loop).
    const again = JSON.parse((await post(t.port, '/xiaozhi/ota/', { ...FIRMWARE, ...pair })).body) as {
      activation?: { code: string };
    };
    assert.equal(again.activation?.code, body.activation?.code);
    assert.equal((await post(t.port, '/xiaozhi/ota/activate', { ...FIRMWARE, ...pair })).status, 202);
    // Unbound: the WebSocket refuses it whatever it presents, its own token too.
    assert.equal((await upgrade(t.port, { ...pair })).status, 401);
    assert.equal((await upgrade(t.port, { ...pair, Authorization: `Bearer ${token}` })).status, 401);
  });

  test('the activation message names the command that binds where the server runs: from the sources, npm run devices', async () => {
    const res = await post(t.port, '/xiaozhi/ota/', {
      ...FIRMWARE,
      'Device-Id': 'a0:b1:c2:d3:e4:16',
      'Client-Id': 'sources-16',
    });
    const a = (JSON.parse(res.body) as { activation?: { code: string; message: string } }).activation;
    assert.equal(a?.message, `Activation code ${a?.code}. On the server run: npm run devices -- bind ${a?.code}`);
    const issued = t.logs.find('activation code issued').find((l) => l.code === a?.code);
    assert.equal(issued?.bind, `npm run devices -- bind ${a?.code}`, 'the log line the operator reads says it too');
  });

  test('in the image (its XIAOZHI_BIND_COMMAND), the message names devices bind CODE and the compose form', async () => {
    const fromImage = /XIAOZHI_BIND_COMMAND="([^"]+)"/.exec(readFileSync('Dockerfile', 'utf8'))?.[1];
    assert.ok(fromImage, 'the Dockerfile sets XIAOZHI_BIND_COMMAND');
    const config = loadConfig({
      argv: [],
      env: { XIAOZHI_BIND_COMMAND: fromImage, XIAOZHI_DATA_DIR: join(dir, 'image') },
      cwd: dir,
    }).config;
    assert.equal(config.server.auth.bindCommand, fromImage);
    const image = await startTestApp({
      createConversation: recordingConversation().factory,
      config: {
        server: {
          dataDir: join(dir, 'image'),
          auth: { mode: 'activation', bindCommand: config.server.auth.bindCommand },
        },
      },
    });
    try {
      const res = await post(image.port, '/xiaozhi/ota/', {
        ...FIRMWARE,
        'Device-Id': 'a0:b1:c2:d3:e4:17',
        'Client-Id': 'image-17',
      });
      const a = (JSON.parse(res.body) as { activation?: { code: string; message: string } }).activation;
      const code = a?.code ?? '';
      assert.match(code, /^\d{6}$/);
      assert.ok(a?.message.includes(`devices bind ${code}`), a?.message);
      assert.ok(a?.message.includes(`docker compose exec server devices bind ${code}`), a?.message);
      assert.equal(a?.message.includes('npm run'), false, a?.message);
    } finally {
      await image.close();
    }
  });

  test('a client that connects right after activation, without asking OTA again, uses the token of the code answer', async () => {
    // py-xiaozhi's flow: OTA (code + token), poll /activate until bound, then straight to the WebSocket.
    const devices = t.app.devices;
    assert.ok(devices);
    const fresh = { 'Device-Id': 'a0:b1:c2:d3:e4:01', 'Client-Id': '6f1c1d2e-1111-4222-8333-444455550001' };
    const res = await post(t.port, '/xiaozhi/ota/', { ...FIRMWARE, ...fresh });
    assert.equal(res.status, 200);
    const body = JSON.parse(res.body) as { websocket: { token?: string }; activation?: { code: string } };
    const code = body.activation?.code ?? '';
    assert.match(code, /^\d{6}$/);
    const token = body.websocket.token ?? '';
    assert.ok(token.length >= 40, `the code answer carries the pair's token: ${res.body}`);

    const early = new DeviceSim({ url: t.wsUrl, deviceId: fresh['Device-Id'], clientId: fresh['Client-Id'], token });
    await assert.rejects(early.opened, /HTTP 401/, 'the token verifies only once the pair is bound');
    early.close();

    assert.equal((await devices.bind(code)).ok, true);
    assert.equal((await post(t.port, '/xiaozhi/ota/activate', { ...FIRMWARE, ...fresh })).status, 200);
    const dev = new DeviceSim({ url: t.wsUrl, deviceId: fresh['Device-Id'], clientId: fresh['Client-Id'], token });
    try {
      await dev.hello();
      assert.equal(dev.closeCode, null);
    } finally {
      dev.close();
    }
    const after = JSON.parse((await post(t.port, '/xiaozhi/ota/', { ...FIRMWARE, ...fresh })).body) as {
      websocket: { token?: string };
    };
    assert.equal(after.websocket.token, token, 'after binding OTA hands the same token');
  });

  test('bound by its code: OTA hands that device its own token; only that pair can use it; revoking ends the session', async () => {
    const devices = t.app.devices;
    assert.ok(devices);
    const code = (await devices.pendingCode(pair['Device-Id'], pair['Client-Id'], 'test'))?.code ?? '';
    assert.equal((await devices.bind(code)).ok, true);
    assert.equal((await post(t.port, '/xiaozhi/ota/activate', { ...FIRMWARE, ...pair })).status, 200);
    const body = JSON.parse((await post(t.port, '/xiaozhi/ota/', { ...FIRMWARE, ...pair })).body) as {
      websocket: { token?: string };
      activation?: unknown;
    };
    assert.equal(body.activation, undefined);
    const token = body.websocket.token ?? '';
    assert.ok(token.length >= 40);

    // The same token for the same MAC with another Client-Id, or another MAC: refused.
    assert.equal(
      (
        await upgrade(t.port, {
          ...pair,
          'Client-Id': 'ffffffff-1111-4222-8333-444455556666',
          Authorization: `Bearer ${token}`,
        })
      ).status,
      401,
    );
    assert.equal(
      (await upgrade(t.port, { ...pair, 'Device-Id': 'a0:b1:c2:d3:e4:00', Authorization: `Bearer ${token}` })).status,
      401,
    );
    // A stranger's OTA still carries no credential.
    const stranger = await post(t.port, '/xiaozhi/ota/', {
      ...FIRMWARE,
      'Device-Id': pair['Device-Id'],
      'Client-Id': 'ffffffff-1111-4222-8333-444455556666',
    });
    assert.equal(stranger.body.includes(token), false);

    const dev = new DeviceSim({ url: t.wsUrl, deviceId: pair['Device-Id'], clientId: pair['Client-Id'], token });
    await dev.hello();
    assert.equal((await devices.revoke(pair['Device-Id'])).length, 1);
    assert.equal(await dev.closed, 4005);
    assert.equal((await upgrade(t.port, { ...pair, Authorization: `Bearer ${token}` })).status, 401);
  });

  test('bound again after a revocation, the pair gets a new token and the revoked one stays refused', async () => {
    const devices = t.app.devices;
    assert.ok(devices);
    const again = { 'Device-Id': 'a0:b1:c2:d3:e4:77', 'Client-Id': '6f1c1d2e-1111-4222-8333-444455550077' };
    const bindAndToken = async (): Promise<string> => {
      const first = JSON.parse((await post(t.port, '/xiaozhi/ota/', { ...FIRMWARE, ...again })).body) as {
        activation?: { code: string };
      };
      assert.equal((await devices.bind(first.activation?.code ?? '')).ok, true);
      return (
        (
          JSON.parse((await post(t.port, '/xiaozhi/ota/', { ...FIRMWARE, ...again })).body) as {
            websocket: { token?: string };
          }
        ).websocket.token ?? ''
      );
    };
    const t1 = await bindAndToken();
    assert.equal((await upgrade(t.port, { ...again, Authorization: `Bearer ${t1}` })).status, 101);
    assert.equal((await devices.revoke(again['Device-Id'])).length, 1);
    const t2 = await bindAndToken();
    assert.notEqual(t2, t1, 'a new binding, a new token');
    assert.equal(
      (await upgrade(t.port, { ...again, Authorization: `Bearer ${t1}` })).status,
      401,
      'the revoked token opens nothing',
    );
    assert.equal((await upgrade(t.port, { ...again, Authorization: `Bearer ${t2}` })).status, 101);
  });

  test('identity fields are checked at the edge: hostile OTA bodies get 400 and the registry stays small', async () => {
    const huge = 'a'.repeat(125 * 1024);
    for (let i = 0; i < 40; i++) {
      const body = JSON.stringify({
        mac_address: `${huge}${i}`,
        uuid: `${huge}${i}`,
        application: { version: '1.0.0' },
      });
      const res = await post(t.port, '/xiaozhi/ota/', { ...FIRMWARE, 'Content-Type': 'application/json' }, body);
      assert.equal(res.status, 400, `request ${i}: ${res.body.slice(0, 200)}`);
      assert.ok(res.body.length < 300, 'the answer does not echo the value');
    }
    for (const [headers, body] of [
      [{ 'Device-Id': 'not-a-mac', 'Client-Id': 'c1' }, '{}'],
      [{ 'Device-Id': 'a0:b1:c2:d3:e4:f5', 'Client-Id': 'x'.repeat(37) }, '{}'],
      [{}, JSON.stringify({ mac_address: 'a0:b1:c2:d3:e4', uuid: 'u-1' })],
      [{}, JSON.stringify({ mac_address: 'a0:b1:c2:d3:e4:f6', uuid: 'tab\there' })],
    ] as Array<[Record<string, string>, string]>) {
      assert.equal(
        (await post(t.port, '/xiaozhi/ota/', { ...FIRMWARE, ...headers }, body)).status,
        400,
        `${JSON.stringify(headers)} ${body}`,
      );
    }
    // A field that is not a string is a broken body: answered, without an identity (so no code).
    assert.equal(
      (await post(t.port, '/xiaozhi/ota/', FIRMWARE, JSON.stringify({ mac_address: 'a0:b1:c2:d3:e4:f6', uuid: 12 })))
        .status,
      503,
    );
    assert.ok(statSync(join(dir, 'xiaozhi.db')).size < 1024 * 1024, 'the database stays small');
    // A well-formed body identity, MAC with dashes in upper case, is normalised and gets a code.
    const ok = await post(
      t.port,
      '/xiaozhi/ota/',
      FIRMWARE,
      JSON.stringify({ mac_address: 'A0-B1-C2-D3-E4-F8', uuid: 'Third-Party-Client' }),
    );
    assert.equal(ok.status, 200, ok.body);
    assert.equal(
      (JSON.parse(ok.body) as { activation?: { challenge: string } }).activation?.challenge,
      'a0:b1:c2:d3:e4:f8',
    );
    assert.ok(
      (await t.app.devices?.list())?.pending.some(
        (p) => p.deviceId === 'a0:b1:c2:d3:e4:f8' && p.clientId === 'third-party-client',
      ),
    );
  });
});

describe('activation mode with allowedDevices', () => {
  test("a device bound by another process (the devices CLI) but not in allowedDevices stays refused while this server's cache has not heard of the bind", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'identity-allowed-'));
    const t = await startTestApp({
      createConversation: recordingConversation().factory,
      config: {
        store: { url: 'sqlite:xiaozhi.db' },
        server: { dataDir: dir, auth: { mode: 'activation', allowedDevices: ['a0:b1:c2:d3:e4:aa'] } },
      },
    });
    // The operator's command: its own connection to the same database, no change feed.
    const cli = await openStore({
      url: 'sqlite:xiaozhi.db',
      dataDir: dir,
      secret: '',
      codeTtlMs: 600_000,
      pendingPerSource: 3,
      replica: 'cli',
      log: silentLogger,
      watch: false,
    });
    try {
      const stranger = { 'Device-Id': 'a0:b1:c2:d3:e4:bb', 'Client-Id': '6f1c1d2e-1111-4222-8333-4444555500bb' };
      const body = JSON.parse((await post(t.port, '/xiaozhi/ota/', { ...FIRMWARE, ...stranger })).body) as {
        websocket: { token?: string };
        activation?: { code: string };
      };
      assert.ok((await cli.registry.bind(body.activation?.code ?? '')).ok);
      const dev = new DeviceSim({
        url: t.wsUrl,
        deviceId: stranger['Device-Id'],
        clientId: stranger['Client-Id'],
        token: body.websocket.token ?? '',
      });
      await assert.rejects(dev.opened, /HTTP 401/, "the database's binding does not lift the allowedDevices list");
      dev.close();
    } finally {
      await cli.close();
      await t.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('a spoofed Device-Id cannot replace a session', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({
      createConversation: recordingConversation().factory,
      config: { server: { maxSessions: 1 } },
    });
  });
  after(() => t.close());

  test('another Client-Id claiming the MAC, in any case, header or query, kicks no one and gets no room at capacity', async () => {
    const real = new DeviceSim({
      url: t.wsUrl,
      deviceId: 'cc:00:00:00:00:01',
      clientId: '11111111-2222-4333-8444-555555555555',
    });
    await real.hello();
    for (const [headers, query] of [
      [{ 'Device-Id': 'CC:00:00:00:00:01' }, ''],
      [{ 'Device-Id': 'cc:00:00:00:00:01', 'Client-Id': 'evil' }, ''],
      [{}, '?device-id=Cc:00:00:00:00:01'],
      [{}, '?device-id=cc:00:00:00:00:01&client-id=evil'],
    ] as const) {
      const res = await upgrade(t.port, headers, query);
      assert.equal(res.status, 503, `${JSON.stringify(headers)}${query}`);
    }
    assert.equal(real.closeCode, null, 'the real device is still connected');
    // The same identity (a device that rebooted) still replaces its old session, in any case.
    const again = new DeviceSim({
      url: t.wsUrl,
      deviceId: 'CC:00:00:00:00:01',
      clientId: '11111111-2222-4333-8444-555555555555',
    });
    await again.hello();
    assert.equal(await real.closed, 4003);
    again.close();
    await again.closed;
  });

  test('the 401 answer does not say whether a MAC is allowlisted', async () => {
    const a = await startTestApp({
      createConversation: recordingConversation().factory,
      config: { server: { auth: { mode: 'tokens', tokens: ['tok-x'], allowedDevices: ['aa:00:00:00:00:01'] } } },
    });
    try {
      const allowed = await upgrade(a.port, { 'Device-Id': 'aa:00:00:00:00:01', Authorization: 'Bearer wrong' });
      const notAllowed = await upgrade(a.port, { 'Device-Id': 'aa:00:00:00:00:02', Authorization: 'Bearer tok-x' });
      assert.equal(allowed.status, 401);
      assert.equal(notAllowed.status, 401);
      assert.equal(allowed.body, notAllowed.body);
    } finally {
      await a.close();
    }
  });
});

describe('long tokens', () => {
  test('a 300-character token works in the header and the query', async () => {
    const long = 'k'.repeat(300);
    const t = await startTestApp({
      createConversation: recordingConversation().factory,
      config: { server: { auth: { mode: 'tokens', tokens: [long] } } },
    });
    try {
      assert.equal((await upgrade(t.port, { Authorization: `Bearer ${long}` })).status, 101);
      assert.equal((await upgrade(t.port, {}, `?authorization=${encodeURIComponent(`Bearer ${long}`)}`)).status, 101);
      assert.equal((await upgrade(t.port, { Authorization: `Bearer ${long.slice(0, 299)}` })).status, 401);
    } finally {
      await t.close();
    }
  });
});

describe('the registry file of earlier versions', () => {
  test('imported once at the first start, even past the old 8 MB limit: bad rows left out, the file renamed, the bound device keeps its token', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'identity-import-'));
    const file = join(dir, 'devices.json');
    const huge = 'c'.repeat(125 * 1024);
    const secret = 'z'.repeat(43);
    const bound = {
      id: '0123456789',
      deviceId: 'a0:00:00:00:00:0b',
      clientId: 'c-11',
      boundAt: '2026-01-01T00:00:00.000Z',
      generation: 4,
    };
    const pending = Array.from({ length: 70 }, (_, i) => ({
      code: String(200000 + i),
      deviceId: `${huge}${i}`,
      clientId: `${huge}${i}`,
      expiresAt: 9e12,
    }));
    writeFileSync(file, JSON.stringify({ version: 1, secret, generation: 4, devices: [bound], pending }));
    assert.ok(statSync(file).size > 8 * 1024 * 1024);
    const sink = createLogSink();
    const config = ConfigSchema.parse({ server: { dataDir: dir, auth: { mode: 'activation' } } });
    const app = await buildApp({
      config,
      log: createLogger({ level: 'info', logContent: false, destination: sink.stream }),
      createConversation: recordingConversation().factory,
    });
    try {
      const { port } = await listenOnLoopback(app);
      const info = sink.lines.find((l) => l.level === 30 && l.file === file);
      assert.ok(info, `an info line naming ${file}: ${sink.text().slice(0, 500)}`);
      assert.equal(info.bound, 1);
      assert.equal(info.dropped, 70);
      assert.deepEqual(
        readdirSync(dir).filter((f) => f.startsWith('devices.json')),
        ['devices.json.imported'],
      );
      assert.equal(app.devices?.secret(), secret);
      // The bound device's token (secret + pair + generation) still opens the WebSocket.
      const res = await post(port, '/xiaozhi/ota/', {
        ...FIRMWARE,
        'Device-Id': bound.deviceId,
        'Client-Id': bound.clientId,
      });
      const token = (JSON.parse(res.body) as { websocket: { token?: string } }).websocket.token ?? '';
      assert.equal(
        (
          await upgrade(port, {
            'Device-Id': bound.deviceId,
            'Client-Id': bound.clientId,
            Authorization: `Bearer ${token}`,
          })
        ).status,
        101,
      );
      const fresh = await post(port, '/xiaozhi/ota/', {
        ...FIRMWARE,
        'Device-Id': 'a0:00:00:00:00:0a',
        'Client-Id': 'c-10',
      });
      assert.equal(fresh.status, 200, 'a new device gets its code');
      assert.ok(
        ((await app.devices?.pendingCode('a0:00:00:00:00:0a', 'c-10', 'test'))?.generation ?? 0) > 4,
        'new generations continue after the imported ones',
      );
    } finally {
      await app.fastify.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('secrets for log redaction', () => {
  test('onSecret is told the token secret at start and every token OTA hands out', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'identity-secret-'));
    const seen: string[] = [];
    const config = ConfigSchema.parse({ server: { dataDir: dir, auth: { mode: 'activation' } } });
    const app = await buildApp({
      config,
      log: createLogger({ level: 'debug', logContent: false, destination: createLogSink().stream }),
      createConversation: recordingConversation().factory,
      onSecret: (v) => seen.push(v),
    });
    try {
      const { port } = await listenOnLoopback(app);
      assert.deepEqual(seen, [app.devices?.secret()]);
      const pair = { 'Device-Id': 'a0:00:00:00:00:09', 'Client-Id': 'c-9' };
      const code = (await app.devices?.pendingCode(pair['Device-Id'], pair['Client-Id'], 'test'))?.code ?? '';
      await app.devices?.bind(code);
      const body = JSON.parse((await post(port, '/xiaozhi/ota/', { ...FIRMWARE, ...pair })).body) as {
        websocket: { token?: string };
      };
      assert.ok(body.websocket.token);
      assert.equal(seen.at(-1), body.websocket.token);
    } finally {
      await app.fastify.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
