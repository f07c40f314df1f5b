/**
 * @module The MQTT transport as the configuration asks for it: started when `mqtt.enabled` and
 * no gateway stands in for it (`mqtt.gateway.endpoint`), on `server.host` unless `mqtt.host`
 * says otherwise, with the limits of `server.*` that bound the WebSocket path too. Settings that
 * do nothing as configured are warned about here, once at start. What assemble.ts and the tests
 * both run.
 */
import type { Logger } from '../../core/logger.ts';
import type { Store } from '../../store/store.ts';
import type { ConversationFactory } from '../../voice/session/conversation.ts';
import type { SessionRegistry } from '../../voice/session/registry.ts';
import type { AdmissionGate } from '../admission.ts';
import { resolveAuthMode } from '../../features/identity/index.ts';
import type { Config } from '../config.ts';
import { inertMqttSettings } from './inert-settings.ts';
import { startMqttTransport, type MqttTransport, type MqttTransportOptions } from './transport.ts';

export interface MqttTransportParts {
  store: Store;
  registry: SessionRegistry;
  createConversation: ConversationFactory;
  admission?: AdmissionGate;
  onSessionOpened?: MqttTransportOptions['onSessionOpened'];
  onUdpDrop?: MqttTransportOptions['onUdpDrop'];
}

export async function mqttTransportFor(config: Config, log: Logger, parts: MqttTransportParts): Promise<MqttTransport | undefined> {
  for (const warning of inertMqttSettings(config.mqtt)) log.warn({ key: 'mqtt' }, warning);
  if (!config.mqtt.enabled || config.mqtt.gateway.endpoint) return undefined;
  const mode = resolveAuthMode(config.server.auth);
  const devices = parts.store.registry;
  return startMqttTransport({
    // Where the HTTP listener listens (HOST), unless the broker is told otherwise.
    mqtt: { ...config.mqtt, host: config.mqtt.host || config.server.host },
    log: log.child({ transport: 'mqtt' }),
    registry: parts.registry,
    createConversation: parts.createConversation,
    auth: {
      mode,
      allowedDevices: config.server.auth.allowedDevices,
      secret: () => devices.secret(),
      binding: (d, c) => devices.binding(d, c),
      storedBinding: (d, c) => devices.storedBinding(d, c),
    },
    // Revocations matter where bindings do.
    ...(mode !== 'open' ? { devices } : {}),
    ...(parts.onSessionOpened ? { onSessionOpened: parts.onSessionOpened } : {}),
    ...(parts.admission ? { admission: parts.admission } : {}),
    ...(parts.onUdpDrop ? { onUdpDrop: parts.onUdpDrop } : {}),
    address: config.server,
    session: {
      helloTimeoutMs: config.server.helloTimeoutMs,
      idleTimeoutMs: config.server.idleTimeoutMs,
      outputSampleRate: config.audio.outputSampleRate,
      frameDurationMs: config.audio.frameDurationMs,
      maxSessions: config.server.maxSessions,
    },
    controlRate: config.server.controlMessages,
    maxConnectionsPerAddress: config.server.maxSessionsPerIp,
    connectRate: config.server.upgradeRate,
  });
}
