/**
 * @module The DeviceChannel of one MQTT+UDP audio session: JSON is published to the device's
 * MQTT connection, audio goes out as encrypted UDP datagrams. Closing it ends the audio session
 * only: the server says `goodbye` with the session id (unless the device said it first, or a new
 * hello replaced the session), the UDP state is released, and the MQTT connection stays open.
 */
import type { CloseCode } from '../../protocol/close-codes.ts';
import type { ServerMessage, UdpHelloBlock } from '../../protocol/messages.ts';
import type { DeviceChannel } from '../../voice/session/channel.ts';
import type { UdpAudio, UdpAudioSession } from './udp-audio.ts';

/** What the channel needs of the device's MQTT connection. */
export interface JsonLink {
  readonly connected: boolean;
  /** Bytes queued on the connection's socket. */
  readonly bufferedBytes: number;
  publish(message: Record<string, unknown>): boolean;
}

export class MqttUdpChannel implements DeviceChannel {
  readonly udp: UdpHelloBlock;
  readonly #link: JsonLink;
  readonly #audio: UdpAudio;
  readonly #session: UdpAudioSession;
  readonly #sessionId: string;
  #closed = false;
  /** No goodbye is sent on close: the device said goodbye, or started a new session. */
  #quiet = false;

  constructor(opts: { sessionId: string; link: JsonLink; audio: UdpAudio; session: UdpAudioSession; server: string }) {
    this.#link = opts.link;
    this.#audio = opts.audio;
    this.#session = opts.session;
    this.#sessionId = opts.sessionId;
    this.udp = { server: opts.server, port: opts.audio.port, key: opts.session.key.toString('hex'), nonce: opts.session.nonce.toString('hex') };
  }

  get isOpen(): boolean {
    return !this.#closed && this.#link.connected;
  }

  get bufferedBytes(): number {
    return this.#link.bufferedBytes;
  }

  sendJson(message: ServerMessage): void {
    if (!this.isOpen) return;
    this.#link.publish(message as unknown as Record<string, unknown>);
  }

  sendAudio(opus: Uint8Array): void {
    if (!this.isOpen) return;
    this.#audio.send(this.#session, opus);
  }

  /** The session ends without a goodbye from us (the device already closed its side). */
  closeQuietly(): void {
    this.#quiet = true;
  }

  close(_code: CloseCode, _reason?: string): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#audio.release(this.#session);
    if (!this.#quiet && this.#link.connected) this.#link.publish({ type: 'goodbye', session_id: this.#sessionId });
  }
}
