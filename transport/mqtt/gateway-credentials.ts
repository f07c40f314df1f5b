/**
 * @module The OTA `mqtt` section for a device that is to connect through xinnan's
 * xiaozhi-mqtt-gateway instead of the embedded broker. The gateway accepts a CONNECT when:
 * - the password is base64(HMAC-SHA256(its `MQTT_SIGNATURE_KEY`, client_id + "|" + username));
 * - the client id splits on `@@@` into exactly three parts: a group, the MAC with `_` for `:`,
 *   and the id it then sends to this server as `Client-Id`;
 * - the username is base64 of a JSON object (it replaces that object's `ip` with the address the
 *   device connected from, and forwards it to this server as `X-Forwarded-For`).
 * The third part is the device's own Client-Id (its UUID), so the pair the gateway presents on
 * the WebSocket is the pair this server saw at OTA; a Client-Id that would break the split
 * falls back to the MAC, as xinnan's own server does.
 * Pure: no I/O, no clock.
 */
import { createHmac } from 'node:crypto';

/** The gateway's MQTT port when `MQTT_PORT` is not set; the firmware would assume 8883 with TLS. */
export const GATEWAY_DEFAULT_PORT = 1883;
/** Seconds; the firmware's own default. */
const DEFAULT_KEEPALIVE_S = 240;
/** The gateway reads whatever topic the device publishes to; this is the name it hands out itself. */
const PUBLISH_TOPIC = 'device-server';
const SEPARATOR = '@@@';
/** Longest group name sent (the board type is the device's to choose). */
const MAX_GROUP_CHARS = 64;

export interface GatewayMqttOptions {
  /** `host` or `host:port` of the gateway's MQTT listener (`mqtt.gateway.endpoint`). */
  endpoint: string;
  /** The gateway's `MQTT_SIGNATURE_KEY` (`mqtt.gateway.signatureKey`). */
  signatureKey: string;
  /** The device's MAC as OTA stores it: lower case, `:`-separated. */
  deviceId: string;
  /** The device's Client-Id (the UUID in its NVS). */
  clientId: string;
  /** The board type the device reported at OTA; names the gateway group. */
  board: string;
  /** The device's address as this server sees it (the gateway overwrites it with its own view). */
  ip: string;
  /** MQTT keepalive told to the device, seconds (`mqtt.keepaliveS`); default 240. */
  keepaliveS?: number;
}

/** The OTA `mqtt` object in the gateway's format: endpoint, client_id, username, password, keepalive, publish_topic. */
export function gatewayMqttSection(opts: GatewayMqttOptions): Record<string, string | number> {
  const mac = opts.deviceId.replace(/:/g, '_');
  const clientId = `${groupOf(opts.board)}${SEPARATOR}${mac}${SEPARATOR}${thirdPart(opts.clientId, mac)}`;
  const username = Buffer.from(JSON.stringify({ ip: opts.ip })).toString('base64');
  const password = createHmac('sha256', opts.signatureKey).update(`${clientId}|${username}`).digest('base64');
  return {
    endpoint: withPort(opts.endpoint.trim()),
    client_id: clientId,
    username,
    password,
    keepalive: opts.keepaliveS ?? DEFAULT_KEEPALIVE_S,
    publish_topic: PUBLISH_TOPIC,
  };
}

/** `GID_<board>` with anything but letters, digits, `_`, `-` and `.` replaced by `_` (no `@@@` can form). */
function groupOf(board: string): string {
  const safe = board.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, MAX_GROUP_CHARS);
  return `GID_${safe || 'default'}`;
}

/** The Client-Id when the gateway can carry it unchanged, else the MAC. */
function thirdPart(clientId: string, mac: string): string {
  return clientId !== '' && !clientId.includes('@') ? clientId : mac;
}

/** `host` → `host:1883`; `[v6]` → `[v6]:1883`; a given port is kept. */
function withPort(endpoint: string): string {
  if (/^\[[^\]]*\]:\d+$/.test(endpoint) || /^[^:]+:\d+$/.test(endpoint)) return endpoint;
  if (/^\[[^\]]*\]$/.test(endpoint) || !endpoint.includes(':')) return `${endpoint}:${GATEWAY_DEFAULT_PORT}`;
  return endpoint;
}
