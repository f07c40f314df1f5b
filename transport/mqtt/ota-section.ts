/**
 * @module Which OTA `mqtt` section a device gets: the gateway's (when `mqtt.gateway.endpoint` is
 * set), the embedded broker's, or none. The firmware prefers `mqtt` over `websocket` whenever it
 * is present, so a device that could not connect with it must not get one: in `activation` mode
 * the pair needs a binding or a pending code (the password is that binding's, like the WebSocket
 * token), in `tokens` mode a binding; in `open` mode any identified pair gets one.
 */
import type { AuthMode, MqttOtaProvider } from '../../features/identity/index.ts';
import { gatewayMqttSection } from './gateway-credentials.ts';
import type { MqttTransport } from './transport.ts';

export interface MqttOtaOptions {
  mode: AuthMode;
  gateway: { endpoint: string; signatureKey: string };
  keepaliveS: number;
  /** The embedded broker (absent when it does not run). */
  transport?: Pick<MqttTransport, 'otaSection'>;
  /** The pair's current binding (the store's registry). */
  binding(deviceId: string, clientId: string): { generation: number } | undefined;
}

export function mqttOtaProvider(opts: MqttOtaOptions): MqttOtaProvider | undefined {
  if (opts.gateway.endpoint) {
    const { endpoint, signatureKey } = opts.gateway;
    return (req) =>
      gatewayMqttSection({
        endpoint,
        signatureKey,
        deviceId: req.deviceId,
        clientId: req.clientId,
        board: req.board,
        ip: req.ip,
        keepaliveS: opts.keepaliveS,
      });
  }
  const transport = opts.transport;
  if (!transport) return undefined;
  return (req) => {
    let generation: number | null;
    if (opts.mode === 'open') generation = null;
    else if (opts.mode === 'activation') generation = req.generation ?? null;
    else generation = opts.binding(req.deviceId, req.clientId)?.generation ?? null;
    if (generation === null && opts.mode !== 'open') return undefined;
    return transport.otaSection({
      deviceId: req.deviceId,
      clientId: req.clientId,
      generation,
      host: req.host,
      hostIsOwn: req.hostIsOwn,
    });
  };
}
