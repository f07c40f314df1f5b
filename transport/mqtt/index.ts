/**
 * @module The firmware's MQTT+UDP transport as the server starts it: from the configuration
 * (`mqttTransportFor`, its `mqtt` block `MqttSchema`), the handle it gives back (`MqttTransport`:
 * ports, stats, OTA section, push's idle links, close) and the OTA `mqtt` section every answer
 * gets (`mqttOtaProvider`: the embedded broker's or a gateway's).
 */
export { mqttTransportFor, type MqttConfig, type MqttTransportParts } from './transport-for-config.ts';
export type { MqttOtaSection, MqttTransport } from './transport.ts';
export { mqttOtaProvider } from './ota-section.ts';
export { MqttSchema } from './settings.ts';
