/**
 * @module The seam between a device session (protocol, timers, state) and the conversation logic
 * (VAD, ASR, LLM, TTS). The session parses and validates; the conversation acts. A conversation is
 * created once per session, after the hello, and owns every resource it starts.
 */
import type { Logger } from '../../core/logger.ts';
import type { ListenMode } from '../../protocol/messages.ts';
import type { CloseCode } from '../../protocol/close-codes.ts';
import type { DeviceChannel } from './channel.ts';
import type { SessionEvent, SessionState } from './state.ts';

export interface SessionInfo {
  sessionId: string;
  deviceId: string | null;
  clientId: string | null;
  protocolVersion: 1 | 2 | 3;
  /** What the device announced for its uplink (16 kHz / 60 ms on stock firmware). */
  uplink: { sampleRate: number; frameDurationMs: number };
  /** What we announced for the downlink. */
  downlink: { sampleRate: number; frameDurationMs: number };
  features: { mcp: boolean; aec: boolean };
  /** `http(s)://host[:port]` the device's connection reached the server at (its Host header); absent over MQTT. */
  reachedAt?: string;
}

export interface StateControl {
  readonly current: SessionState;
  /** The listen mode of the latest `listen start` (auto until the device says otherwise). */
  readonly mode: ListenMode;
  /** Applies an event; returns the new state, or null when the event does not apply in this state. */
  apply(event: SessionEvent): SessionState | null;
}

export interface ConversationContext {
  info: SessionInfo;
  channel: DeviceChannel;
  log: Logger;
  /** Aborted when the session ends. */
  signal: AbortSignal;
  state: StateControl;
  /** Ends the session (e.g. after a goodbye). */
  closeSession(code: CloseCode, reason?: string): void;
}

export interface Conversation {
  listenStart(mode: ListenMode): void;
  listenStop(): void;
  /** `listen detect`: wake word or typed text. */
  detect(text: string): void;
  /** One uplink Opus packet (already unframed). */
  audio(packet: Uint8Array, timestamp: number): void;
  abort(reason: string | undefined): void;
  /**
   * The JSON-RPC payload of a device `mcp` message; or its raw text when the frame is not JSON
   * (the firmware pastes error text unescaped), for the device MCP to salvage.
   */
  mcp(payload: Record<string, unknown> | string): void;
  /** True while a turn is running (thinking or speaking). */
  readonly busy: boolean;
  /**
   * Speaks `text` the server starts (push, reminders) as a turn without the model, in the turn's
   * assistant's voice: now when idle (`spoken`), after the running turn's answer (`after_turn`),
   * or at once with `interrupt` (the running turn is aborted first, `spoken`).
   */
  say(text: string, opts: { interrupt?: boolean }): 'spoken' | 'after_turn';
  /** Lets a running turn finish, up to the deadline (ms since epoch), then aborts it. */
  drain(deadline: number): Promise<void>;
  /** Releases everything. Called once, when the session ends. */
  close(): Promise<void>;
}

export type ConversationFactory = (ctx: ConversationContext) => Conversation;
