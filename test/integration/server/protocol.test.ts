/**
 * The device WebSocket protocol against the real server on a loopback port: OTA, hello in each
 * framing version, auth, timeouts, replacement, and the session seam.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DeviceSim } from '../../fixtures/device-sim.ts';
import { recordingConversation } from '../../helpers/recording-conversation.ts';
import { startTestApp, type TestApp } from '../../helpers/test-app.ts';
import { request } from 'node:http';
import { sleep } from '../../helpers/wait.ts';

function rawPost(
  port: number,
  path: string,
  body: string,
  headers: Record<string, string>,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        headers: { ...headers, 'Content-Length': Buffer.byteLength(body) },
      },
      (res) => {
        let data = '';
        res.on('data', (c: Buffer) => (data += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: data }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('OTA endpoint', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({
      createConversation: recordingConversation().factory,
      config: { server: { auth: { tokens: ['tok-1'] } } },
    });
  });
  after(() => t.close());

  const firmwareBody = {
    version: 2,
    language: 'zh-CN',
    flash_size: 16777216,
    minimum_free_heap_size: '123456',
    mac_address: 'aa:bb:cc:dd:ee:ff',
    uuid: '6f1c1d2e-1111-4222-8333-444455556666',
    chip_model_name: 'esp32s3',
    chip_info: { model: 9, cores: 2, revision: 2, features: 18 },
    application: {
      name: 'xiaozhi',
      version: '2.4.2',
      compile_time: 'Aug  8 2026T08:33:45Z',
      idf_version: 'v5.5.2',
      elf_sha256: 'ab'.repeat(32),
    },
    partition_table: [{ label: 'nvs', type: 1, subtype: 2, address: 36864, size: 16384 }],
    ota: { label: 'ota_0' },
    board: {
      type: 'bread-compact-wifi',
      name: 'bread-compact-wifi',
      ssid: 'MyWiFi',
      rssi: -50,
      channel: 1,
      ip: '192.168.1.10',
      mac: 'aa:bb:cc:dd:ee:ff',
    },
    something_new: { nested: [1, 2, 3] },
  };

  test('POST answers the websocket config the firmware expects, with the Host the device used', async () => {
    // fetch() cannot set Host; the device's HTTP client sends it with the port it dialled.
    const res = await rawPost(t.port, '/xiaozhi/ota/', JSON.stringify(firmwareBody), {
      'Content-Type': 'application/json',
      'Device-Id': 'aa:bb:cc:dd:ee:ff',
      'Client-Id': 'x',
      'Activation-Version': '1',
      Host: 'speaker-host.lan:8123',
    });
    assert.equal(res.status, 200);
    const body = JSON.parse(res.body) as Record<string, Record<string, unknown>>;
    assert.equal(body.websocket?.url, 'ws://speaker-host.lan:8123/xiaozhi/v1/');
    // tokens mode: the static token is never handed out (OTA answers strangers too).
    assert.equal(body.websocket !== undefined && 'token' in body.websocket, false);
    assert.equal(body.websocket?.version, 1);
    assert.equal(typeof body.server_time?.timestamp, 'number');
    assert.ok(Math.abs((body.server_time?.timestamp as number) - Date.now()) < 60_000);
    assert.equal(typeof body.server_time?.timezone_offset, 'number');
    assert.equal('mqtt' in body, false, 'an mqtt key would switch the device to MQTT');
    assert.equal('firmware' in body, false, 'no firmware unless configured');
    assert.equal('activation' in body, false);
  });

  test('lenient: empty, broken and text bodies still get the configuration', async () => {
    for (const [ct, body] of [
      ['application/json', ''],
      ['text/plain', 'not json'],
      ['application/json', '{"mac_address": 5, "application": "x"}'],
    ] as const) {
      const res = await fetch(`${t.httpUrl}/xiaozhi/ota/`, { method: 'POST', headers: { 'Content-Type': ct }, body });
      assert.equal(res.status, 200, `${ct} ${body}`);
      const json = (await res.json()) as { websocket?: { url?: string } };
      assert.match(json.websocket?.url ?? '', /^ws:\/\/127\.0\.0\.1:\d+\/xiaozhi\/v1\/$/);
    }
  });

  test('lenient: a body with no content type, or any other one (curl -d sends a form type), still gets the configuration', async () => {
    const body = JSON.stringify(firmwareBody);
    const cases: Array<[string, Record<string, string>]> = [
      ['no Content-Type', { 'Device-Id': 'aa:bb:cc:dd:ee:ff', 'Client-Id': 'x' }],
      ['form type', { 'Content-Type': 'application/x-www-form-urlencoded', 'Device-Id': 'aa:bb:cc:dd:ee:ff' }],
      ['charset', { 'Content-Type': 'application/json; charset=utf-8' }],
      ['odd type', { 'Content-Type': 'application/vnd.whatever+json' }],
    ];
    for (const [what, headers] of cases) {
      const res = await rawPost(t.port, '/xiaozhi/ota/', body, headers);
      assert.equal(res.status, 200, `${what}: ${res.body}`);
      const json = JSON.parse(res.body) as { websocket?: { url?: string } };
      assert.match(json.websocket?.url ?? '', /^ws:\/\/127\.0\.0\.1:\d+\/xiaozhi\/v1\/$/, what);
    }
    // The activation poll too.
    assert.equal((await rawPost(t.port, '/xiaozhi/ota/activate', '{}', {})).status, 200);
  });

  test('GET answers a short text for humans; activate answers 200', async () => {
    const res = await fetch(`${t.httpUrl}/xiaozhi/ota/`);
    assert.equal(res.status, 200);
    assert.match(await res.text(), /OTA endpoint is working/);
    const act = await fetch(`${t.httpUrl}/xiaozhi/ota/activate`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: '{}',
    });
    assert.equal(act.status, 200);
  });

  test('CORS preflight from an allowed origin with Device-Id and Client-Id headers; other origins refused', async () => {
    const own = `http://127.0.0.1:${t.port}`;
    const res = await fetch(`${t.httpUrl}/xiaozhi/ota/`, {
      method: 'OPTIONS',
      headers: {
        Origin: own,
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'device-id,client-id,content-type',
      },
    });
    assert.equal(res.status, 204);
    assert.equal(res.headers.get('access-control-allow-origin'), own);
    assert.match(res.headers.get('access-control-allow-headers') ?? '', /Device-Id/);
    assert.match(res.headers.get('access-control-allow-headers') ?? '', /Client-Id/);
    const post = await fetch(`${t.httpUrl}/xiaozhi/ota/`, {
      method: 'POST',
      headers: { Origin: 'https://x.example', 'Content-Type': 'application/json' },
      body: '{}',
    });
    assert.equal(post.status, 403);
    assert.equal(post.headers.get('access-control-allow-origin'), null);
  });
});

describe('OTA with public URL and firmware configured', () => {
  test('hands out the configured URL, framing version and firmware', async () => {
    const t = await startTestApp({
      createConversation: recordingConversation().factory,
      config: {
        server: {
          publicWsUrl: 'wss://voice.example.com/xiaozhi/v1/',
          protocolVersion: 3,
          firmware: { version: '2.5.0', url: 'https://fw.example.com/x.bin' },
          timezoneOffsetMinutes: 480,
        },
      },
    });
    try {
      const res = await fetch(`${t.httpUrl}/xiaozhi/ota/`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: '{}',
      });
      const body = (await res.json()) as Record<string, Record<string, unknown>>;
      assert.equal(body.websocket?.url, 'wss://voice.example.com/xiaozhi/v1/');
      assert.equal(body.websocket?.version, 3);
      assert.equal(body.websocket?.token, '');
      assert.deepEqual(body.firmware, { version: '2.5.0', url: 'https://fw.example.com/x.bin' });
      assert.equal(body.server_time?.timezone_offset, 480);
    } finally {
      await t.close();
    }
  });
});

describe('hello exchange', () => {
  let t: TestApp;
  const rec = recordingConversation();
  before(async () => {
    t = await startTestApp({ createConversation: rec.factory, config: { audio: { outputSampleRate: 16000 } } });
  });
  after(() => t.close());

  for (const version of [1, 2, 3] as const) {
    test(`protocol v${version}: hello round trip, then audio frames reach the conversation unframed`, async () => {
      const dev = new DeviceSim({
        url: t.wsUrl,
        deviceId: `aa:00:00:00:00:0${version}`,
        clientId: 'c',
        protocolVersion: version,
      });
      try {
        const hello = await dev.hello({ mcp: true });
        assert.equal(hello.transport, 'websocket');
        assert.match(String(hello.session_id), /^[A-Za-z0-9-]+$/);
        assert.deepEqual(hello.audio_params, { format: 'opus', sample_rate: 16000, channels: 1, frame_duration: 60 });
        dev.listen('start', { mode: 'auto' });
        dev.sendOpus(new Uint8Array(37).fill(7), 1234);
        dev.sendOpus(new Uint8Array(120).fill(1));
        const session = await dev.waitFor('session recorded', () =>
          rec.sessions.find((s) => s.ctx.info.sessionId === dev.sessionId),
        );
        await dev.waitFor('two audio frames', () => session.calls.filter((c) => c.name === 'audio').length === 2);
        assert.deepEqual(
          session.calls.filter((c) => c.name === 'audio').map((c) => c.arg),
          [37, 120],
        );
        assert.equal(session.ctx.info.protocolVersion, version);
        assert.equal(session.ctx.info.features.mcp, true);
        assert.equal(session.ctx.state.current, 'listening');
        // Downlink framing follows the negotiated version too.
        session.ctx.channel.sendAudio(new Uint8Array([1, 2, 3, 4, 5]));
        await dev.waitFor('downlink audio', () => dev.audio.length === 1);
        assert.deepEqual([...(dev.audio[0]?.payload ?? [])], [1, 2, 3, 4, 5]);
      } finally {
        dev.close();
      }
    });
  }

  test('old firmware hello without features, with a string version, is accepted', async () => {
    const dev = new DeviceSim({ url: t.wsUrl });
    try {
      await dev.opened;
      dev.sendRaw(
        '{"type":"hello","version": "1","transport":"websocket","audio_params":{"format":"opus", "sample_rate":16000, "channels":1, "frame_duration":60}}',
      );
      const hello = await dev.waitJson('hello');
      assert.equal(hello.transport, 'websocket');
    } finally {
      dev.close();
    }
  });

  test('listen modes, stop, detect, abort and mcp reach the conversation; state follows', async () => {
    const dev = new DeviceSim({ url: t.wsUrl, deviceId: 'bb:00:00:00:00:01' });
    try {
      await dev.hello();
      const s = await dev.waitFor('session', () => rec.sessions.find((x) => x.ctx.info.sessionId === dev.sessionId));
      dev.listen('start', { mode: 'manual' });
      dev.listen('stop');
      dev.listen('detect', { text: '你好小智' });
      dev.sendJson({
        session_id: dev.sessionId,
        type: 'mcp',
        payload: { jsonrpc: '2.0', id: 1, result: { tools: [] } },
      });
      dev.abort('wake_word_detected');
      await dev.waitFor('calls', () => s.calls.length >= 5);
      assert.deepEqual(
        s.calls.map((c) => c.name),
        ['listenStart', 'listenStop', 'detect', 'mcp', 'abort'],
      );
      assert.equal(s.calls[0]?.arg, 'manual');
      assert.equal(s.calls[2]?.arg, '你好小智');
      assert.equal(s.calls[4]?.arg, 'wake_word_detected');
      await dev.waitJson('tts', 'stop');
      assert.equal(s.ctx.state.mode, 'manual');
    } finally {
      dev.close();
    }
  });
});

describe('auth', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({
      createConversation: recordingConversation().factory,
      config: {
        server: {
          auth: { tokens: ['secret-1', 'secret-2'], allowedDevices: ['AA:BB:CC:00:00:01', 'aa:bb:cc:00:00:02'] },
        },
      },
    });
  });
  after(() => t.close());

  test('header form accepted', async () => {
    const dev = new DeviceSim({ url: t.wsUrl, deviceId: 'aa:bb:cc:00:00:01', token: 'secret-2' });
    await dev.opened;
    await dev.hello();
    dev.close();
  });

  test('query form accepted (browsers cannot set headers)', async () => {
    const dev = new DeviceSim({ url: t.wsUrl, deviceId: 'aa:bb:cc:00:00:02', token: 'secret-1', queryAuth: true });
    await dev.opened;
    await dev.hello();
    dev.close();
  });

  for (const [name, opts] of [
    ['bad token (header)', { deviceId: 'aa:bb:cc:00:00:01', token: 'nope' }],
    ['missing token', { deviceId: 'aa:bb:cc:00:00:01' }],
    ['bad token (query)', { deviceId: 'aa:bb:cc:00:00:01', token: 'nope', queryAuth: true }],
    ['device not on the allowlist', { deviceId: 'aa:bb:cc:00:00:09', token: 'secret-1' }],
    ['no device id with an allowlist', { token: 'secret-1' }],
  ] as const) {
    test(`refused with 401 before the upgrade: ${name}`, async () => {
      const dev = new DeviceSim({ url: t.wsUrl, ...opts });
      await assert.rejects(dev.opened, /HTTP 401/);
    });
  }

  test('refusals are logged without the token', () => {
    const refused = t.logs.find('device refused');
    assert.ok(refused.length >= 5);
    assert.equal(t.logs.text().includes('nope'), false, 'the presented token must not be logged');
    assert.equal(t.logs.text().includes('secret-1'), false, 'accepted tokens must not be logged');
  });
});

describe('timeouts and replacement', () => {
  test('no hello within helloTimeoutMs closes with 4001', async () => {
    const t = await startTestApp({
      createConversation: recordingConversation().factory,
      config: { server: { helloTimeoutMs: 300 } },
    });
    try {
      const dev = new DeviceSim({ url: t.wsUrl });
      await dev.opened;
      const code = await dev.closed;
      assert.equal(code, 4001);
      assert.equal(t.logs.find('no hello in time').length, 1);
    } finally {
      await t.close();
    }
  });

  test('no data within idleTimeoutMs closes with 4002; data keeps it open', async () => {
    const t = await startTestApp({
      createConversation: recordingConversation().factory,
      config: { server: { idleTimeoutMs: 600 } },
    });
    try {
      const dev = new DeviceSim({ url: t.wsUrl });
      await dev.hello();
      const started = Date.now();
      // Keep talking for ~1 s: the session must stay open.
      for (let i = 0; i < 5; i++) {
        await sleep(200);
        dev.sendOpus(new Uint8Array(10));
      }
      assert.equal(dev.closeCode, null);
      // Pings from the device are answered; the server sends none of its own by default.
      dev.ws.ping();
      await dev.waitFor('pong', () => dev.pongsReceived === 1, 2000);
      const code = await dev.closed;
      assert.equal(code, 4002);
      assert.ok(Date.now() - started >= 1000);
      assert.equal(dev.pingsReceived, 0, 'no keep-alive pings by default');
    } finally {
      await t.close();
    }
  });

  test('a new connection from the same Device-Id replaces the old one', async () => {
    const rec = recordingConversation();
    const t = await startTestApp({ createConversation: rec.factory });
    try {
      const a = new DeviceSim({ url: t.wsUrl, deviceId: 'cc:00:00:00:00:01' });
      await a.hello();
      const b = new DeviceSim({ url: t.wsUrl, deviceId: 'CC:00:00:00:00:01' });
      await b.hello();
      assert.equal(await a.closed, 4003);
      assert.equal(b.closeCode, null);
      await b.waitFor('old conversation closed', () => rec.sessions[0]?.closed === true);
      assert.equal(t.app.registry.size, 1);
      assert.equal(t.app.registry.byIdentity('cc:00:00:00:00:01\n')?.id, b.sessionId);
      b.close();
      await b.closed;
      await b.waitFor('registry empty', () => t.app.registry.size === 0);
    } finally {
      await t.close();
    }
  });

  test('server.maxSessions: one more device is refused with 503; a device replacing its own session still fits', async () => {
    const t = await startTestApp({
      createConversation: recordingConversation().factory,
      config: { server: { maxSessions: 2 } },
    });
    try {
      const a = new DeviceSim({ url: t.wsUrl, deviceId: 'ab:00:00:00:00:01' });
      const b = new DeviceSim({ url: t.wsUrl, deviceId: 'ab:00:00:00:00:02' });
      await Promise.all([a.hello(), b.hello()]);
      const c = new DeviceSim({ url: t.wsUrl, deviceId: 'ab:00:00:00:00:03' });
      await assert.rejects(c.opened, /HTTP 503/);
      const a2 = new DeviceSim({ url: t.wsUrl, deviceId: 'ab:00:00:00:00:01' });
      await a2.hello();
      assert.equal(await a.closed, 4003);
      assert.equal(t.logs.find('device refused: server at capacity').length, 1);
      a2.close();
      b.close();
    } finally {
      await t.close();
    }
  });

  test('a dropped TCP connection (no close frame, as the firmware does) ends the session cleanly', async () => {
    const rec = recordingConversation();
    const t = await startTestApp({ createConversation: rec.factory });
    try {
      const a = new DeviceSim({ url: t.wsUrl, deviceId: 'dd:00:00:00:00:01' });
      await a.hello();
      a.drop();
      await a.waitFor('conversation closed', () => rec.sessions[0]?.closed === true);
      assert.equal(t.app.registry.size, 0);
    } finally {
      await t.close();
    }
  });
});
