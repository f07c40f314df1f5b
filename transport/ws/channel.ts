/**
 * @module Adapts a `ws` WebSocket to the session's DeviceChannel: JSON serialization, audio
 * framing for the negotiated protocol version, and close handling.
 */
import type { WebSocket } from 'ws';
import type { CloseCode } from '../../protocol/close-codes.ts';
import { frameAudio, type ProtocolVersion } from '../../protocol/framing.ts';
import type { ServerMessage } from '../../protocol/messages.ts';
import type { DeviceChannel } from '../../voice/session/channel.ts';

/** ws readyState OPEN. */
const OPEN = 1;

/** How long a device may take to answer our close frame before its socket is dropped. */
export const CLOSE_HANDSHAKE_GRACE_MS = 2000;

export interface OutputLimit {
  /** Bytes queued in the socket beyond which the client counts as not reading. */
  maxBufferedBytes: number;
  /** Called once when the limit is passed; sends stop at that point. */
  onOverflow: (bufferedBytes: number) => void;
}

export class WsDeviceChannel implements DeviceChannel {
  #ws: WebSocket;
  #version: () => ProtocolVersion;
  #limit: OutputLimit | undefined;
  #overflowed = false;

  constructor(ws: WebSocket, version: () => ProtocolVersion, limit?: OutputLimit) {
    this.#ws = ws;
    this.#version = version;
    this.#limit = limit;
  }

  get isOpen(): boolean {
    return this.#ws.readyState === OPEN && !this.#overflowed;
  }

  get bufferedBytes(): number {
    return this.#ws.bufferedAmount;
  }

  sendJson(message: ServerMessage): void {
    if (!this.isOpen) return;
    this.#ws.send(JSON.stringify(message));
    this.#checkLimit();
  }

  sendAudio(opus: Uint8Array): void {
    if (!this.isOpen) return;
    this.#ws.send(frameAudio(this.#version(), opus), { binary: true });
    this.#checkLimit();
  }

  /**
   * A client that stops reading would otherwise make every answer pile up in this process's
   * memory (one socket was measured growing it by 500 MB). Past the limit nothing more is queued.
   */
  #checkLimit(): void {
    if (!this.#limit || this.#overflowed) return;
    const queued = this.#ws.bufferedAmount;
    if (queued <= this.#limit.maxBufferedBytes) return;
    this.#overflowed = true;
    this.#limit.onOverflow(queued);
  }

  close(code: CloseCode, reason?: string): void {
    if (this.#ws.readyState > OPEN) return;
    const ws = this.#ws;
    ws.close(code, reason?.slice(0, 120));
    // A client that does not read will not read the close frame either: do not wait the 30 s
    // closing handshake of ws with its buffer held.
    if (this.#overflowed) {
      ws.terminate();
      return;
    }
    // A device that went silent may be gone without a FIN (power cut, Wi-Fi lost: half-open).
    // ws would hold its socket for 30 s waiting for the close reply; a live device answers in
    // milliseconds, so after a short grace the socket is dropped.
    const grace = setTimeout(() => ws.terminate(), CLOSE_HANDSHAKE_GRACE_MS);
    ws.once('close', () => clearTimeout(grace));
  }
}
