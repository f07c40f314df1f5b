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
  /** `onWritten`: called once the message is handed to the socket (or its write failed). */
  publish(message: Record<string, unknown>, onWritten?: () => void): boolean;
}

/** Audio frames held behind unwritten JSON at most (a few seconds of speech); older ones are dropped. */
const MAX_HELD_FRAMES = 64;

export class MqttUdpChannel implements DeviceChannel {
  readonly udp: UdpHelloBlock;
  readonly #link: JsonLink;
  readonly #audio: UdpAudio;
  readonly #session: UdpAudioSession;
  readonly #sessionId: string;
  #closed = false;
  /** No goodbye is sent on close: the device said goodbye, or started a new session. */
  #quiet = false;
  /** JSON messages published and not yet written to the socket. */
  #unwritten = 0;
  /** Audio sent while JSON was unwritten: it leaves after that JSON (see sendAudio). */
  #held: Uint8Array[] = [];

  constructor(opts: { sessionId: string; link: JsonLink; audio: UdpAudio; session: UdpAudioSession; server: string }) {
    this.#link = opts.link;
    this.#audio = opts.audio;
    this.#session = opts.session;
    this.#sessionId = opts.sessionId;
    this.udp = {
      server: opts.server,
      port: opts.audio.port,
      key: opts.session.key.toString('hex'),
      nonce: opts.session.nonce.toString('hex'),
    };
  }

  get isOpen(): boolean {
    return !this.#closed && this.#link.connected;
  }

  get bufferedBytes(): number {
    return this.#link.bufferedBytes;
  }

  sendJson(message: ServerMessage): void {
    if (!this.isOpen) return;
    this.#unwritten++;
    const sent = this.#link.publish(message as unknown as Record<string, unknown>, () => {
      this.#unwritten--;
      if (this.#unwritten === 0) this.#flushHeld();
    });
    if (!sent) this.#unwritten--;
  }

  /**
   * The broker writes a published message on a later turn of the event loop, while a datagram
   * leaves at once. The firmware plays audio only after it has read `tts start`, so audio sent
   * after a JSON message is held until that message is written: the device gets them in the order
   * the session sent them, as over one WebSocket.
   */
  sendAudio(opus: Uint8Array): void {
    if (!this.isOpen) return;
    if (this.#unwritten > 0) {
      if (this.#held.length >= MAX_HELD_FRAMES) this.#held.shift();
      this.#held.push(opus);
      return;
    }
    this.#audio.send(this.#session, opus);
  }

  #flushHeld(): void {
    const held = this.#held;
    this.#held = [];
    if (!this.isOpen) return;
    for (const opus of held) this.#audio.send(this.#session, opus);
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
