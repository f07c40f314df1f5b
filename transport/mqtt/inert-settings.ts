/**
 * @module The `mqtt` settings that do nothing in the configuration as given, for a warning at
 * start: OTA offers the gateway's section whenever `mqtt.gateway.endpoint` is set (the gateway is
 * itself the broker), and the embedded broker runs only with `mqtt.enabled` and no gateway. A key
 * counts as set when it differs from its default. Pure: no I/O.
 */
import type { z } from 'zod';
import { MqttSchema } from './settings.ts';

type MqttConfig = z.output<typeof MqttSchema>;

/** Keys only the embedded broker reads (`keepaliveS` goes to the gateway's section too). */
const BROKER_KEYS = [
  'host',
  'port',
  'tlsCert',
  'tlsKey',
  'publicEndpoint',
  'udpPort',
  'udpPublicHost',
  'publishTopic',
  'maxConnections',
  'maxPendingPerAddress',
  'maxPacketBytes',
] as const;

const DEFAULTS = MqttSchema.parse({});

/** One sentence per problem, naming the keys and what to change. */
export function inertMqttSettings(mqtt: MqttConfig): string[] {
  const out: string[] = [];
  const changed = BROKER_KEYS.filter(
    (k) => k in mqtt && mqtt[k as keyof MqttConfig] !== DEFAULTS[k as keyof MqttConfig],
  ).map((k) => `mqtt.${k}`);
  const gateway = mqtt.gateway.endpoint !== '';
  if (!gateway && mqtt.gateway.signatureKey !== '') {
    out.push(
      'mqtt.gateway.signatureKey has no effect without mqtt.gateway.endpoint: OTA offers devices no gateway; set the endpoint devices reach the gateway at',
    );
  }
  if (gateway && mqtt.gateway.signatureKey === '') {
    out.push(
      "mqtt.gateway.endpoint is set without mqtt.gateway.signatureKey: the gateway refuses the passwords OTA hands out; set it to the gateway's MQTT_SIGNATURE_KEY",
    );
  }
  if (gateway) {
    const inert = [...(mqtt.enabled ? ['mqtt.enabled'] : []), ...changed];
    if (inert.length > 0)
      out.push(
        `${inert.join(', ')} ha${inert.length === 1 ? 's' : 've'} no effect while mqtt.gateway.endpoint is set: the gateway is the broker, the embedded one does not run`,
      );
  } else if (!mqtt.enabled && changed.length > 0) {
    out.push(
      `${changed.join(', ')} ha${changed.length === 1 ? 's' : 've'} no effect: mqtt.enabled is false, so the embedded broker does not run (set mqtt.enabled: true to use it)`,
    );
  }
  return out;
}
