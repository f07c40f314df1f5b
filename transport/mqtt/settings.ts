/**
 * @module The `mqtt` block of the configuration: the embedded broker and UDP socket, or the
 * gateway that stands in for them. server/config-schema.ts composes it into the whole.
 */
import { z } from 'zod';

/**
 * The firmware's other transport: MQTT for control (an embedded broker) plus UDP for audio
 * (AES-128-CTR). Off by default: the firmware prefers `mqtt` over `websocket` whenever OTA offers it.
 */
export const MqttSchema = z.strictObject({
  /** Runs the embedded broker and the UDP socket, and OTA offers `mqtt` to devices (the gateway needs no broker here). */
  enabled: z.boolean().default(false),
  /** Interface of the broker and the UDP socket; empty: `server.host` (which `HOST` sets), as the HTTP listener. */
  host: z.string().default(''),
  /** TCP port of the broker: 1883, or 8883 with TLS (the firmware uses TLS exactly on port 8883). */
  port: z.number().int().min(0).max(65535).default(1883),
  /** PEM files; both set: the broker speaks TLS (give port 8883). */
  tlsCert: z.string().default(''),
  tlsKey: z.string().default(''),
  /** `host:port` the devices are told (OTA `mqtt.endpoint`); empty: the host the OTA request used and `port`. */
  publicEndpoint: z.string().default(''),
  /** UDP port for audio; 0 picks a free one (tests). */
  udpPort: z.number().int().min(0).max(65535).default(8884),
  /** Address devices send UDP to (server hello `udp.server`); empty: the host of the MQTT endpoint. */
  udpPublicHost: z.string().default(''),
  /** Seconds; told to the device in OTA (`keepalive`). */
  keepaliveS: z.number().int().min(10).max(3600).default(240),
  /** Topic the device publishes to (OTA `publish_topic`). */
  publishTopic: z.string().min(1).max(64).default('device-server'),
  /** Concurrent broker connections; past it new ones are refused. */
  maxConnections: z.number().int().min(1).default(10_000),
  /**
   * Connections per address that have not had a CONNECT accepted yet (a device's is pending for
   * milliseconds); one more closes the address's oldest. They do not count against
   * `server.maxSessionsPerIp`, which limits the authenticated ones.
   */
  maxPendingPerAddress: z.number().int().min(2).max(10_000).default(16),
  /** Largest MQTT packet accepted, in bytes. */
  maxPacketBytes: z.number().int().min(1024).max(1_048_576).default(65_536),
  /**
   * Running behind xinnan's xiaozhi-mqtt-gateway instead of the embedded broker: OTA hands out the
   * gateway's endpoint and credentials signed with its key (its `MQTT_SIGNATURE_KEY`).
   */
  gateway: z
    .strictObject({
      endpoint: z.string().default(''),
      signatureKey: z.string().default(''),
    })
    .prefault({}),
});
