/**
 * A minimal MQTT+UDP device for the transport's own tests: connects with an OTA `mqtt` section
 * (the `mqtt` package), publishes JSON to its topic, and speaks the UDP audio as the firmware
 * does (header copied from the nonce, AES-128-CTR, downlink dropped unless type 0x01, exact
 * length and a newer sequence). The full simulated firmware lives in test/fixtures/firmware/.
 */
import { createSocket, type Socket } from 'node:dgram';
import { connectAsync, type IClientOptions, type MqttClient } from 'mqtt';
import { aesCtr, UDP_HEADER_BYTES } from '../../protocol/udp-packet.ts';
import { waitFor } from './wait.ts';
import type { MqttOtaSection } from '../../transport/mqtt/transport.ts';

/** The fields of the OTA `mqtt` section a client uses: the server's own type, not a copy. */
export type MqttSection = Pick<
  MqttOtaSection,
  'endpoint' | 'client_id' | 'username' | 'password' | 'keepalive' | 'publish_topic'
>;

export interface UdpBlock {
  server: string;
  port: number;
  key: string;
  nonce: string;
}

export class MqttUdpClient {
  readonly mqtt: MqttClient;
  readonly section: MqttSection;
  readonly json: Array<{ msg: Record<string, unknown>; at: number }> = [];
  /** Accepted downlink frames of the current audio session, decrypted. */
  readonly audio: Array<{ payload: Buffer; sequence: number; at: number }> = [];
  /** Downlink datagrams dropped by the firmware's rules. */
  downlinkDropped = 0;
  udp: Socket | undefined;
  block: UdpBlock | undefined;
  sessionId = '';
  #key = Buffer.alloc(0);
  #nonce = Buffer.alloc(0);
  #sequence = 0;
  #remoteSequence = 0;

  private constructor(mqtt: MqttClient, section: MqttSection) {
    this.mqtt = mqtt;
    this.section = section;
    mqtt.on('message', (_topic, payload) => {
      try {
        this.json.push({ msg: JSON.parse(payload.toString()) as Record<string, unknown>, at: performance.now() });
      } catch {
        // The firmware logs and ignores what is not JSON.
      }
    });
  }

  /** `options`: more options of the `mqtt` client (TLS: `protocol: 'mqtts'` and its `ca`). */
  static async connect(
    section: MqttSection,
    override: Partial<Pick<MqttSection, 'client_id' | 'username' | 'password'>> = {},
    options: IClientOptions = {},
  ): Promise<MqttUdpClient> {
    const scheme = options.protocol ?? 'mqtt';
    // Without retries a connection closed before CONNACK rejects (with them it would wait for ever).
    const client = await connectAsync(
      `${scheme}://${section.endpoint}`,
      {
        clientId: override.client_id ?? section.client_id,
        username: override.username ?? section.username,
        password: override.password ?? section.password,
        keepalive: section.keepalive,
        protocolVersion: 4,
        reconnectPeriod: 0,
        connectTimeout: 5000,
        ...options,
      },
      false,
    );
    return new MqttUdpClient(client, section);
  }

  publish(message: Record<string, unknown>): void {
    this.mqtt.publish(this.section.publish_topic, JSON.stringify(message), { qos: 0 });
  }

  async waitJson(
    type: string,
    pred: (m: Record<string, unknown>) => boolean = () => true,
    timeoutMs = 5000,
    from = 0,
  ): Promise<Record<string, unknown>> {
    const found = await waitFor(() => this.json.slice(from).find((j) => j.msg.type === type && pred(j.msg))?.msg, {
      what: `a ${type} message`,
      timeoutMs,
    });
    return found as Record<string, unknown>;
  }

  /** Sends the firmware's hello and opens the UDP side from the server's answer. */
  async hello(timeoutMs = 10_000): Promise<Record<string, unknown>> {
    const from = this.json.length;
    this.publish({
      type: 'hello',
      version: 3,
      transport: 'udp',
      features: { mcp: true },
      audio_params: { format: 'opus', sample_rate: 16000, channels: 1, frame_duration: 60 },
    });
    const hello = await this.waitJson('hello', () => true, timeoutMs, from);
    const block = hello.udp as UdpBlock;
    this.block = block;
    this.sessionId = String(hello.session_id);
    this.#key = Buffer.from(block.key, 'hex');
    this.#nonce = Buffer.from(block.nonce, 'hex');
    this.#sequence = 0;
    this.#remoteSequence = 0;
    this.audio.length = 0;
    this.udp?.close();
    this.udp = await this.#openUdp();
    return hello;
  }

  async #openUdp(): Promise<Socket> {
    const udp = createSocket('udp4');
    udp.on('message', (data) => this.#downlink(data));
    await new Promise<void>((resolve) => udp.bind(0, '127.0.0.1', () => resolve()));
    return udp;
  }

  /** A new UDP socket (a new source port): what a NAT rebinding looks like to the server. */
  async rebind(): Promise<void> {
    this.udp?.close();
    this.udp = await this.#openUdp();
  }

  #downlink(data: Buffer): void {
    if (data.length < UDP_HEADER_BYTES || data[0] !== 0x01 || data.length !== UDP_HEADER_BYTES + data.readUInt16BE(2)) {
      this.downlinkDropped++;
      return;
    }
    const sequence = data.readUInt32BE(12);
    if (sequence <= this.#remoteSequence) {
      this.downlinkDropped++;
      return;
    }
    this.#remoteSequence = sequence;
    this.audio.push({
      payload: aesCtr(this.#key, data.subarray(0, UDP_HEADER_BYTES), data.subarray(UDP_HEADER_BYTES)),
      sequence,
      at: performance.now(),
    });
  }

  /** The datagram the firmware would send for `opus` (the next sequence unless given). */
  datagram(opus: Uint8Array, opts: { sequence?: number; key?: Buffer } = {}): Buffer {
    const header = Buffer.from(this.#nonce);
    const sequence = opts.sequence ?? ++this.#sequence;
    header.writeUInt16BE(opus.byteLength, 2);
    header.writeUInt32BE((sequence * 60) >>> 0, 8);
    header.writeUInt32BE(sequence >>> 0, 12);
    return Buffer.concat([header, aesCtr(opts.key ?? this.#key, header, opus)]);
  }

  sendRaw(datagram: Uint8Array): void {
    if (!this.udp || !this.block) throw new Error('no audio session');
    this.udp.send(datagram, this.block.port, this.block.server);
  }

  sendOpus(opus: Uint8Array): void {
    this.sendRaw(this.datagram(opus));
  }

  async close(): Promise<void> {
    this.udp?.close();
    this.udp = undefined;
    await this.mqtt.endAsync(true);
  }
}
