/**
 * The MQTT transport as the configuration starts it (mqttTransportFor, what assemble.ts runs):
 * where it listens (`mqtt.host` follows `HOST` like the HTTP listener), what the start-up log
 * tells the operator (the ports to open, that devices move to MQTT; settings that do nothing),
 * and the keys of its log lines. Real sockets on loopback, the real logger into a sink.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect as tcpConnect } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigSchema, loadConfig, type Config } from '../../../server/config.ts';
import { createLogger } from '../../../server/logger.ts';
import { openConfiguredStore } from '../../../server/open-store.ts';
import { mqttTransportFor } from '../../../transport/mqtt/transport-for-config.ts';
import type { MqttTransport } from '../../../transport/mqtt/transport.ts';
import { deviceSessionsFor } from '../../../server/app.ts';
import { recordingConversation } from '../../helpers/recording-conversation.ts';
import { createLogSink, type LogSink } from '../../helpers/log-sink.ts';
import { MqttUdpClient } from '../../helpers/mqtt-udp-client.ts';
import { waitFor } from '../../helpers/wait.ts';

/** Starts what the configuration asks for; `use` runs with it, then everything is closed. */
async function withTransport(
  config: Config,
  use: (mqtt: MqttTransport | undefined, logs: LogSink) => Promise<void>,
): Promise<void> {
  const logs = createLogSink();
  const log = createLogger({ level: 'debug', logContent: false, destination: logs.stream });
  const store = await openConfiguredStore(config, log);
  const sessions = deviceSessionsFor(config, { createConversation: recordingConversation().factory, onOpened: [] });
  const mqtt = await mqttTransportFor(config, log, { devices: store.registry, sessions });
  try {
    await use(mqtt, logs);
  } finally {
    await mqtt?.close();
    await store.close();
  }
}

function config(mqtt: Record<string, unknown>, server: Record<string, unknown> = {}): Config {
  return ConfigSchema.parse({ store: { url: 'sqlite::memory:' }, server, mqtt });
}

/** Whether a TCP connection to host:port is accepted. */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = tcpConnect(port, host);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

const warnings = (logs: LogSink): string[] => logs.lines.filter((l) => l.level === 40).map((l) => String(l.msg));

describe('MQTT transport from the configuration', () => {
  test('mqtt.host follows HOST (server.host) as the HTTP listener does; an explicit mqtt.host wins', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'mqtt-host-'));
    try {
      // 127.0.0.2 is loopback on Linux too: a broker bound there is not reachable on 127.0.0.1.
      const loaded = loadConfig({ argv: [], cwd, env: { HOST: '127.0.0.2' } });
      const cfg = ConfigSchema.parse({
        ...loaded.config,
        store: { url: 'sqlite::memory:' },
        mqtt: { ...loaded.config.mqtt, enabled: true, port: 0, udpPort: 0 },
      });
      await withTransport(cfg, async (mqtt) => {
        assert.ok(mqtt);
        assert.equal(await accepts('127.0.0.2', mqtt.ports.mqtt), true);
        assert.equal(
          await accepts('127.0.0.1', mqtt.ports.mqtt),
          false,
          'HOST=127.0.0.2 keeps the broker off other addresses',
        );
      });
      await withTransport(
        config({ enabled: true, host: '127.0.0.1', port: 0, udpPort: 0 }, { host: '127.0.0.2' }),
        async (mqtt) => {
          assert.ok(mqtt);
          assert.equal(await accepts('127.0.0.1', mqtt.ports.mqtt), true);
          assert.equal(await accepts('127.0.0.2', mqtt.ports.mqtt), false);
        },
      );
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  });

  test('with mqtt.enabled the start-up log names the ports to open and says devices move to MQTT', async () => {
    await withTransport(config({ enabled: true, host: '127.0.0.1', port: 0, udpPort: 0 }), async (mqtt, logs) => {
      assert.ok(mqtt);
      const line = logs.lines.find((l) => Array.isArray(l.open));
      assert.ok(line, logs.text());
      assert.deepEqual(line.open, [`${mqtt.ports.mqtt}/tcp`, `${mqtt.ports.udp}/udp`]);
      assert.match(String(line.msg), /open .*TCP .*and UDP/i);
      assert.match(String(line.msg), /devices .*move .*to MQTT/i);
    });
  });

  test('MQTT session log lines carry the transport key once', async () => {
    await withTransport(config({ enabled: true, host: '127.0.0.1', port: 0, udpPort: 0 }), async (mqtt, logs) => {
      assert.ok(mqtt);
      const section = mqtt.otaSection({
        deviceId: 'c0:00:00:00:00:01',
        clientId: 'config-1',
        generation: null,
        host: '127.0.0.1',
        hostIsOwn: true,
      });
      const dev = await MqttUdpClient.connect(section);
      try {
        await dev.hello();
        await waitFor(() => logs.text().includes('device connected over MQTT'), { what: 'the connect line' });
      } finally {
        await dev.close();
      }
      const raw = logs
        .text()
        .split('\n')
        .filter((l) => l.includes('config-1'));
      assert.ok(raw.length > 0);
      for (const l of raw) assert.equal(l.split('"transport":').length - 1, 1, l);
    });
  });

  test('the gateway without mqtt.enabled (as docs/deployment.md shows it) is used, with no warning', async () => {
    await withTransport(
      config({ enabled: false, gateway: { endpoint: 'gw.example.org:1883', signatureKey: 'Key-of-the-gateway' } }),
      async (mqtt, logs) => {
        assert.equal(mqtt, undefined, 'the gateway is the broker: the embedded one does not run');
        assert.deepEqual(warnings(logs), []);
      },
    );
  });

  test('settings that do nothing are named at start', async () => {
    await withTransport(config({ gateway: { signatureKey: 'Key-of-the-gateway' } }), async (_mqtt, logs) => {
      assert.ok(
        warnings(logs).some((w) => /mqtt\.gateway\.signatureKey/.test(w) && /mqtt\.gateway\.endpoint/.test(w)),
        logs.text(),
      );
    });
    await withTransport(config({ gateway: { endpoint: 'gw.example.org' } }), async (_mqtt, logs) => {
      assert.ok(
        warnings(logs).some((w) => /mqtt\.gateway\.signatureKey/.test(w)),
        logs.text(),
      );
    });
    await withTransport(
      config({
        enabled: true,
        port: 8883,
        gateway: { endpoint: 'gw.example.org', signatureKey: 'Key-of-the-gateway' },
      }),
      async (mqtt, logs) => {
        assert.equal(mqtt, undefined);
        assert.ok(
          warnings(logs).some((w) => /mqtt\.enabled/.test(w) && /mqtt\.port/.test(w) && /gateway/.test(w)),
          logs.text(),
        );
      },
    );
    await withTransport(config({ port: 8883, udpPort: 9000 }), async (mqtt, logs) => {
      assert.equal(mqtt, undefined);
      assert.ok(
        warnings(logs).some((w) => /mqtt\.port/.test(w) && /mqtt\.udpPort/.test(w) && /mqtt\.enabled/.test(w)),
        logs.text(),
      );
    });
    // Defaults alone say nothing.
    await withTransport(config({}), async (_mqtt, logs) => {
      assert.deepEqual(warnings(logs), []);
    });
  });
});
