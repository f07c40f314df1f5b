/**
 * @module The session's view of its device connection. Sessions never touch `ws` or Fastify; the
 * WebSocket adapter (transport/ws/channel.ts) implements this, and tests can too.
 */
import type { ServerMessage, UdpHelloBlock } from '../../protocol/messages.ts';
import type { CloseCode } from '../../protocol/close-codes.ts';

export interface DeviceChannel {
  /** Sends one JSON text frame. Dropped silently when the channel is closed. */
  sendJson(message: ServerMessage): void;
  /** Sends one Opus packet, framed for the negotiated protocol version. */
  sendAudio(opus: Uint8Array): void;
  /** Closes the connection with a code from protocol/close-codes.ts. */
  close(code: CloseCode, reason?: string): void;
  readonly isOpen: boolean;
  /** Bytes queued in the socket and not yet sent (backpressure signal). */
  readonly bufferedBytes: number;
  /** Audio over UDP (the MQTT transport): what the server hello tells the device. Absent on WebSocket. */
  readonly udp?: UdpHelloBlock;
}
