/**
 * @module The MQTT transport as the configuration asks for it: started when `mqtt.enabled` and
 * no gateway stands in for it (`mqtt.gateway.endpoint`), on `server.host` unless `mqtt.host`
 * says otherwise, with the limits of `server.*` that bound the WebSocket path too. Settings that
 * do nothing as configured are warned about here, once at start. What assemble.ts and the tests
 * both run.
 */
import type { z } from 'zod';
import type { Logger } from '../../core/logger.ts';
import type { AddressSettings } from '../../core/address-key.ts';
import type { RateLimit } from '../../core/token-bucket.ts';
import type { DeviceRegistry } from '../../store/identity-registry-types.ts';
import { resolveAuthMode, type AuthMode } from '../../features/identity/index.ts';
import type { SessionDoor } from '../session-door/index.ts';
import { inertMqttSettings } from './inert-settings.ts';
import type { MqttSchema } from './settings.ts';
import { startMqttTransport, type MqttTransport, type MqttTransportOptions } from './transport.ts';

/** The parts of the configuration the transport reads (the server's `Config` is one). */
export interface MqttConfig {
  mqtt: z.output<typeof MqttSchema>;
  server: AddressSettings & {
    host: string;
    auth: { mode?: AuthMode | undefined; tokens: readonly string[]; allowedDevices: readonly string[] };
    maxSessionsPerIp: number;
    upgradeRate: RateLimit;
    controlMessages: RateLimit;
  };
}

export interface MqttTransportParts {
  /** The store's registry: the device-token secret, bindings, revocations. */
  devices: Pick<DeviceRegistry, 'secret' | 'binding' | 'storedBinding' | 'onRevoked'>;
  sessions: SessionDoor;
  onUdpDrop?: MqttTransportOptions['onUdpDrop'];
}

export async function mqttTransportFor(
  config: MqttConfig,
  log: Logger,
  parts: MqttTransportParts,
): Promise<MqttTransport | undefined> {
  for (const warning of inertMqttSettings(config.mqtt)) log.warn({ key: 'mqtt' }, warning);
  if (!config.mqtt.enabled || config.mqtt.gateway.endpoint) return undefined;
  const mode = resolveAuthMode(config.server.auth);
  const { devices } = parts;
  return startMqttTransport({
    // Where the HTTP listener listens (HOST), unless the broker is told otherwise.
    mqtt: { ...config.mqtt, host: config.mqtt.host || config.server.host },
    log: log.child({ transport: 'mqtt' }),
    sessions: parts.sessions,
    auth: {
      mode,
      allowedDevices: config.server.auth.allowedDevices,
      secret: () => devices.secret(),
      binding: (d, c) => devices.binding(d, c),
      storedBinding: (d, c) => devices.storedBinding(d, c),
    },
    // Revocations matter where bindings do.
    ...(mode !== 'open' ? { devices } : {}),
    ...(parts.onUdpDrop ? { onUdpDrop: parts.onUdpDrop } : {}),
    address: config.server,
    controlRate: config.server.controlMessages,
    maxConnectionsPerAddress: config.server.maxSessionsPerIp,
    connectRate: config.server.upgradeRate,
  });
}
