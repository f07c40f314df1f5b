/**
 * @module One device's MQTT connection: the JSON it publishes and what the server publishes back
 * to it (to this client only: the firmware subscribes to nothing). Each `hello` opens a new
 * audio session (a DeviceSession over an MqttUdpChannel), ending the one before; `goodbye` ends
 * it; everything else goes to the open session. The connection outlives its sessions, which is
 * what lets the server reach an idle device (IdleDeviceLink).
 */
import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import type { Client } from 'aedes';
import type { Logger } from '../../core/logger.ts';
import { createLogRateLimit } from '../../core/log-rate-limit.ts';
import { TokenBucket, type RateLimit } from '../../core/token-bucket.ts';
import { CloseCode } from '../../protocol/close-codes.ts';
import { DeviceHelloSchema } from '../../protocol/messages.ts';
import type { DeviceSession } from '../../voice/session/session.ts';
import type { IdleDeviceLink } from '../../features/push/index.ts';
import type { UdpAudio } from './udp-audio.ts';
import { MqttUdpChannel, type JsonLink } from './udp-channel.ts';

/** What every link of a transport shares. */
export interface LinkContext {
  audio: UdpAudio;
  /** Topic of what the server publishes (the firmware reads any). */
  downlinkTopic: string;
  controlRate: RateLimit;
  /**
   * Opens the DeviceSession of a hello on `channel` through the session door; null when the
   * server refuses new sessions now (draining, capacity, overload).
   */
  openSession(link: MqttDeviceLink, sessionId: string, channel: MqttUdpChannel, log: Logger): DeviceSession | null;
  /** Address this device sends UDP to; its connection reached us at `localAddress`. */
  udpServerFor(link: MqttDeviceLink, localAddress: string | undefined): string;
}

/**
 * Hellos per connection: each one starts a session (a conversation, a media stream), where a
 * repeated hello on a WebSocket changes nothing. A device opens one per wake word or button press.
 */
const HELLO_RATE: RateLimit = { perSecond: 0.5, burst: 5 };

/** Messages a device publishes that the link itself looks at. */
function messageType(text: string): { type: string; sessionId?: string; frameDurationMs?: number } | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const v = value as Record<string, unknown>;
  if (typeof v.type !== 'string') return null;
  if (v.type === 'hello') {
    const hello = DeviceHelloSchema.safeParse(v);
    return { type: 'hello', frameDurationMs: hello.success ? (hello.data.audio_params?.frame_duration ?? 60) : 60 };
  }
  return { type: v.type, ...(typeof v.session_id === 'string' ? { sessionId: v.session_id } : {}) };
}

export class MqttDeviceLink implements IdleDeviceLink, JsonLink {
  readonly deviceId: string;
  readonly clientId: string;
  readonly client: Client;
  readonly log: Logger;
  readonly #socket: Socket;
  readonly #ctx: LinkContext;
  readonly #control: TokenBucket;
  readonly #hellos = new TokenBucket(HELLO_RATE);
  #session: DeviceSession | undefined;
  #channel: MqttUdpChannel | undefined;
  /** The open session's audio: `ready` once the device's first datagram told where it goes (push waits for it). */
  #audio: { sessionId: string; ready: boolean; when: Promise<boolean>; settle: (ok: boolean) => void } | undefined;
  #ratedOut = 0;
  #closed = false;

  /** `socket`: the TCP (or TLS) socket under the client's stream. */
  constructor(client: Client, socket: Socket, deviceId: string, clientId: string, ctx: LinkContext, log: Logger) {
    this.client = client;
    this.#socket = socket;
    this.deviceId = deviceId;
    this.clientId = clientId;
    this.#ctx = ctx;
    // Whatever a device repeats costs a few warnings, then one a second.
    this.log = createLogRateLimit({ perSecond: 1, burst: 5 }).wrap(log);
    this.#control = new TokenBucket(ctx.controlRate);
  }

  get inSession(): boolean {
    return this.#session !== undefined && !this.#session.ended;
  }

  /** The open audio session, if any. */
  get session(): DeviceSession | undefined {
    return this.inSession ? this.#session : undefined;
  }

  audioReady(sessionId: string): true | Promise<boolean> | undefined {
    const a = this.#audio;
    if (!a || a.sessionId !== sessionId || !this.inSession) return undefined;
    return a.ready ? true : a.when;
  }

  /** From CONNACK on (the broker writes to a client still finishing its connection) until it closes. */
  get connected(): boolean {
    return !this.#closed && !this.client.closed;
  }

  get bufferedBytes(): number {
    return this.client.conn.writableLength + this.#socket.writableLength;
  }

  /** `onWritten`: called once the message is handed to the socket (or its write failed). */
  publish(message: Record<string, unknown>, onWritten?: () => void): boolean {
    if (!this.connected) return false;
    // A write error closes the client; its disconnect ends the session.
    this.client.publish(
      {
        topic: this.#ctx.downlinkTopic,
        payload: Buffer.from(JSON.stringify(message)),
        qos: 0,
        cmd: 'publish',
        retain: false,
        dup: false,
      },
      () => onWritten?.(),
    );
    return true;
  }

  /** One message the device published to its topic. Never throws. */
  handleMessage(payload: Buffer): void {
    if (this.#closed) return;
    // Every message can make the server work or answer: one connection must not set the pace.
    if (!this.#control.take()) {
      this.#ratedOut++;
      if (this.#ratedOut === 1) this.log.warn('control messages over the rate limit: dropped');
      return;
    }
    const text = payload.toString('utf8');
    const m = messageType(text);
    if (m?.type === 'hello') {
      if (this.#hellos.take()) this.#hello(text, m.frameDurationMs ?? 60);
      else this.log.warn('hellos over the rate limit: not answered');
      return;
    }
    const session = this.session;
    if (!session) {
      this.log.debug({ type: m?.type }, 'message without an audio session ignored');
      return;
    }
    if (m?.type === 'goodbye') {
      // A goodbye naming another session (an earlier one, late) leaves the current one alone.
      if (m.sessionId !== undefined && m.sessionId !== session.id) {
        this.log.debug({ sessionId: m.sessionId }, 'goodbye for another session ignored');
        return;
      }
      // The device has closed its UDP side already and expects no reply.
      this.#channel?.closeQuietly();
    }
    session.handleText(text);
  }

  #hello(text: string, frameDurationMs: number): void {
    // A new hello is a new audio session: the old one ends without a goodbye (the device has
    // already forgotten its id, and would ignore it).
    if (this.#session && !this.#session.ended) {
      this.#channel?.closeQuietly();
      this.#session.close(CloseCode.Normal, 'new hello');
    }
    const sessionId = randomUUID();
    const log = this.log.child({ sessionId });
    const ctx = this.#ctx;
    let settle: (ok: boolean) => void = () => undefined;
    const when = new Promise<boolean>((resolve) => (settle = resolve));
    const audio = { sessionId, ready: false, when, settle };
    const audioSession = ctx.audio.open({
      frameDurationMs,
      log,
      onAudio: (opus, timestamp) => {
        if (this.#session?.id !== sessionId) return;
        if (!audio.ready) {
          // Its address is known from this datagram on: speech sent now reaches the device.
          audio.ready = true;
          audio.settle(true);
        }
        this.#session.handleAudio(opus, timestamp);
      },
    });
    const channel = new MqttUdpChannel({
      sessionId,
      link: this,
      audio: ctx.audio,
      session: audioSession,
      server: ctx.udpServerFor(this, this.#socket.localAddress),
    });
    const session = ctx.openSession(this, sessionId, channel, log);
    if (!session) {
      ctx.audio.release(audioSession);
      return;
    }
    this.#session = session;
    this.#channel = channel;
    this.#audio = audio;
    session.signal.addEventListener(
      'abort',
      () => {
        ctx.audio.release(audioSession);
        audio.settle(false);
      },
      { once: true },
    );
    session.handleText(text);
  }

  /** The connection is gone: the session ends without a goodbye. */
  handleDisconnected(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#session?.handleClosed(1000);
  }

  /** The device lost its right to connect: the session ends, then the connection. */
  revoke(): void {
    if (this.#closed) return;
    this.log.info('device revoked: MQTT connection closed');
    this.#session?.close(CloseCode.Unauthorized);
    this.#closed = true;
    this.client.close();
  }

  /** Shutdown: the session ends with a goodbye, the connection is closed. */
  close(): void {
    this.#session?.close(CloseCode.GoingAway);
    this.#closed = true;
    this.client.close();
  }
}
