/**
 * The OTA `mqtt` section with the real app and the real broker: who gets one in each auth mode,
 * the endpoint (always with the port), that what it hands out connects, the activation flow
 * (credentials with the code, usable once the owner binds), and the gateway's variant.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { buildApp, deviceSessionsFor, recordSessions, type App } from '../../../server/app.ts';
import { ConfigSchema } from '../../../server/config.ts';
import { createLogger } from '../../../server/logger.ts';
import { openConfiguredStore } from '../../../server/open-store.ts';
import { mqttTransportFor } from '../../../transport/mqtt/transport-for-config.ts';
import type { MqttTransport } from '../../../transport/mqtt/transport.ts';
import { recordingConversation } from '../../helpers/recording-conversation.ts';
import { createLogSink } from '../../helpers/log-sink.ts';
import { listenOnLoopback } from '../../helpers/listen.ts';
import { LOOPBACK_CLIENTS } from '../../helpers/test-app.ts';
import { openStore } from '../../../store/store.ts';
import { silentLogger } from '../../../core/logger.ts';
import { MqttUdpClient, type MqttSection } from '../../helpers/mqtt-udp-client.ts';

interface Rig {
  app: App;
  mqtt: MqttTransport | undefined;
  httpUrl: string;
  close(): Promise<void>;
}

async function startRig(overrides: {
  auth?: Record<string, unknown>;
  mqtt?: Record<string, unknown>;
  dataDir?: string;
}): Promise<Rig> {
  const config = ConfigSchema.parse({
    store: { url: overrides.dataDir ? 'sqlite:xiaozhi.db' : 'sqlite::memory:' },
    server: {
      ...LOOPBACK_CLIENTS,
      ...(overrides.auth ? { auth: overrides.auth } : {}),
      ...(overrides.dataDir ? { dataDir: overrides.dataDir } : {}),
    },
    mqtt: { enabled: true, host: '127.0.0.1', port: 0, udpPort: 0, ...overrides.mqtt },
  });
  const log = createLogger({ level: 'debug', logContent: false, destination: createLogSink().stream });
  const store = await openConfiguredStore(config, log);
  const sessions = deviceSessionsFor(config, {
    createConversation: recordingConversation().factory,
    onOpened: [recordSessions(store, config, log)],
  });
  const mqtt = await mqttTransportFor(config, log, { devices: store.registry, sessions });
  const app = await buildApp({ config, log, sessions, store, ...(mqtt ? { mqtt, transports: [mqtt] } : {}) });
  const { httpUrl } = await listenOnLoopback(app);
  let closing: Promise<void> | undefined;
  return {
    app,
    mqtt,
    httpUrl,
    close: () =>
      (closing ??= (async () => {
        await app.fastify.close();
        await store.close();
      })()),
  };
}

async function ota(
  rig: Rig,
  deviceId: string,
  clientId: string,
  headers: Record<string, string> = {},
): Promise<{ mqtt?: MqttSection; websocket: { token?: string }; activation?: { code: string } }> {
  const res = await fetch(`${rig.httpUrl}/xiaozhi/ota/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'device-id': deviceId, 'client-id': clientId, ...headers },
    body: JSON.stringify({ application: { version: '2.4.2' }, board: { type: 'bread-compact-wifi' } }),
  });
  assert.equal(res.status, 200);
  return (await res.json()) as { mqtt?: MqttSection; websocket: { token?: string }; activation?: { code: string } };
}

describe('OTA mqtt section', () => {
  test('open mode: every field, the endpoint with the broker port, and the credentials connect; closed with the app', async () => {
    const rig = await startRig({});
    try {
      const body = await ota(rig, 'b0:00:00:00:00:01', 'ota-open-1');
      assert.ok(body.mqtt);
      assert.deepEqual(Object.keys(body.mqtt).sort(), [
        'client_id',
        'endpoint',
        'keepalive',
        'password',
        'publish_topic',
        'username',
      ]);
      assert.equal(body.mqtt.endpoint, `127.0.0.1:${rig.mqtt?.ports.mqtt}`);
      assert.ok(body.websocket, 'websocket is still offered');
      // A device that did not identify itself gets no credentials.
      const anonymous = (await (await fetch(`${rig.httpUrl}/xiaozhi/ota/`, { method: 'POST', body: '{}' })).json()) as {
        mqtt?: unknown;
      };
      assert.equal(anonymous.mqtt, undefined);
      const dev = await MqttUdpClient.connect(body.mqtt);
      await dev.hello();
      assert.equal(rig.app.registry.size, 1);
      const closed = new Promise<void>((resolve) => dev.mqtt.once('close', () => resolve()));
      await rig.close();
      await closed;
      assert.equal(rig.app.registry.size, 0);
      await dev.close();
    } finally {
      await rig.close();
    }
  });

  test('the UDP server in the hello is the host OTA gave the device (the socket address may be a container one)', async () => {
    const rig = await startRig({});
    try {
      const body = await ota(rig, 'b0:00:00:00:00:07', 'ota-open-7', { 'x-forwarded-host': 'localhost' });
      assert.equal(body.mqtt?.endpoint, `localhost:${rig.mqtt?.ports.mqtt}`);
      const dev = await MqttUdpClient.connect(body.mqtt!);
      try {
        await dev.hello();
        assert.equal(dev.block?.server, 'localhost');
      } finally {
        await dev.close();
      }
    } finally {
      await rig.close();
    }
  });

  test('the public endpoint is handed out as configured', async () => {
    const rig = await startRig({ mqtt: { publicEndpoint: 'voice.example.org:1883' } });
    try {
      const body = await ota(rig, 'b0:00:00:00:00:02', 'ota-open-2');
      assert.equal(body.mqtt?.endpoint, 'voice.example.org:1883');
    } finally {
      await rig.close();
    }
  });

  test('activation mode: the code answer carries credentials that connect once the owner binds', async () => {
    const rig = await startRig({ auth: { mode: 'activation' } });
    try {
      const first = await ota(rig, 'b0:00:00:00:00:03', 'ota-act-3');
      assert.ok(first.activation?.code);
      assert.ok(first.mqtt, 'credentials come with the code, as the WebSocket token does');
      await assert.rejects(MqttUdpClient.connect(first.mqtt), /Bad username or password|Not authorized/i);
      const bound = await rig.app.store.registry.bind(first.activation.code);
      assert.ok(bound.ok);
      const dev = await MqttUdpClient.connect(first.mqtt);
      await dev.hello();
      await dev.close();
      // Asked again once bound: the same credentials.
      const again = await ota(rig, 'b0:00:00:00:00:03', 'ota-act-3');
      assert.deepEqual(again.mqtt, first.mqtt);
    } finally {
      await rig.close();
    }
  });

  test('activation mode: bound by another process (the devices CLI), the credentials OTA hands out connect at once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mqtt-ota-bind-'));
    const rig = await startRig({ auth: { mode: 'activation' }, dataDir: dir });
    // The owner's command: its own connection to the same database, which this server's cache
    // hears of only at its next change-feed poll.
    const other = await openStore({
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
      const first = await ota(rig, 'b0:00:00:00:00:05', 'ota-act-5');
      assert.ok(first.activation?.code && first.mqtt);
      assert.ok((await other.registry.bind(first.activation.code)).ok);
      const again = await ota(rig, 'b0:00:00:00:00:05', 'ota-act-5');
      assert.equal(again.activation, undefined, 'OTA reads the binding from the database');
      assert.ok(again.mqtt);
      const dev = await MqttUdpClient.connect(again.mqtt);
      await dev.hello();
      await dev.close();
    } finally {
      await other.close();
      await rig.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('tokens mode: no section for a pair that is not bound', async () => {
    const rig = await startRig({ auth: { mode: 'tokens', tokens: ['t-1'] } });
    try {
      const body = await ota(rig, 'b0:00:00:00:00:04', 'ota-tok-4');
      assert.equal(body.mqtt, undefined);
    } finally {
      await rig.close();
    }
  });

  test('gateway: the section in the gateway format, and no embedded broker', async () => {
    const rig = await startRig({ mqtt: { gateway: { endpoint: 'gw.example.org:1883', signatureKey: 'k' } } });
    try {
      assert.equal(rig.mqtt, undefined);
      const body = await ota(rig, 'b0:00:00:00:00:05', 'ota-gw-5');
      assert.equal(body.mqtt?.endpoint, 'gw.example.org:1883');
      assert.match(body.mqtt?.client_id ?? '', /^GID_.*@@@b0_00_00_00_00_05@@@ota-gw-5$/);
    } finally {
      await rig.close();
    }
  });

  test('gateway as docs/deployment.md sets it up (mqtt.enabled false: the gateway is the broker) hands out its section', async () => {
    const doc = readFileSync('docs/deployment.md', 'utf8');
    const part = doc.slice(doc.indexOf("## Behind xinnan's MQTT gateway"));
    const block = /```yaml\n([\s\S]*?)```/.exec(part)?.[1];
    assert.ok(block, 'the gateway section of docs/deployment.md has a yaml block');
    const documented = parseYaml(block) as { server: { auth: Record<string, unknown> }; mqtt: Record<string, unknown> };
    assert.equal(documented.mqtt.enabled ?? false, false, 'the documented set-up runs no embedded broker');
    const rig = await startRig({ auth: documented.server.auth, mqtt: documented.mqtt });
    try {
      assert.equal(rig.mqtt, undefined);
      const body = await ota(rig, 'b0:00:00:00:00:08', 'ota-gw-8');
      assert.equal(body.mqtt?.endpoint, 'gw.example.org:1883');
      assert.match(body.mqtt?.client_id ?? '', /^GID_.*@@@b0_00_00_00_00_08@@@ota-gw-8$/);
    } finally {
      await rig.close();
    }
  });

  test('mqtt off: no section', async () => {
    const rig = await startRig({ mqtt: { enabled: false } });
    try {
      assert.equal(rig.mqtt, undefined);
      assert.equal((await ota(rig, 'b0:00:00:00:00:06', 'ota-off-6')).mqtt, undefined);
    } finally {
      await rig.close();
    }
  });
});
