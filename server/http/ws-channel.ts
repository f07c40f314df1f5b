/**
 * @module Adapts a `ws` WebSocket to the session's DeviceChannel: JSON serialization, audio
 * framing for the negotiated protocol version, and close handling.
 */
import type { WebSocket } from 'ws';
import type { CloseCode } from '../../protocol/close-codes.ts';
import { frameAudio, type ProtocolVersion } from '../../protocol/framing.ts';
import type { ServerMessage } from '../../protocol/messages.ts';
import type { DeviceChannel } from '../session/channel.ts';

/** ws readyState OPEN. */
const OPEN = 1;

export class WsDeviceChannel implements DeviceChannel {
  #ws: WebSocket;
  #version: () => ProtocolVersion;

  constructor(ws: WebSocket, version: () => ProtocolVersion) {
    this.#ws = ws;
    this.#version = version;
  }

  get isOpen(): boolean {
    return this.#ws.readyState === OPEN;
  }

  get bufferedBytes(): number {
    return this.#ws.bufferedAmount;
  }

  sendJson(message: ServerMessage): void {
    if (!this.isOpen) return;
    this.#ws.send(JSON.stringify(message));
  }

  sendAudio(opus: Uint8Array): void {
    if (!this.isOpen) return;
    this.#ws.send(frameAudio(this.#version(), opus), { binary: true });
  }

  close(code: CloseCode, reason?: string): void {
    if (this.#ws.readyState > OPEN) return;
    this.#ws.close(code, reason?.slice(0, 120));
  }
}
