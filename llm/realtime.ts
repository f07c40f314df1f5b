/**
 * @module A speech-to-speech ("realtime") model: one connection per device session that hears the
 * user's audio and speaks its answer, calls functions, and reports transcripts of both sides. It is
 * the seam between the voice conversation (which owns turns, playback, tools and memory) and a
 * provider's wire protocol (`providers/openai-realtime/` speaks OpenAI's Realtime events and the
 * dialects that follow them). Nothing here names a vendor.
 *
 * Turns are ours: the conversation's end of turn decides when the user has finished (`commit`),
 * so the device's listen modes, barge-in and the end-of-turn settings behave as with the cascade.
 */
import type { VoiceError } from '../core/errors.ts';
import type { Logger } from '../core/logger.ts';
import type { ToolSpec } from '../mcp/contract/tool-source.ts';

/** What the model is told when its connection opens. */
export interface RealtimeSessionOptions {
  /** The system prompt with the agent's memory and recent history folded in. */
  instructions: string;
  /** Every tool the session may call, offered as functions. */
  tools: ToolSpec[];
  /** Aborted when the connection is no longer wanted (the session ended, a reconnect). */
  signal: AbortSignal;
  log: Logger;
  /** Every event of the connection, in wire order; never called after `close()`. */
  onEvent(event: RealtimeEvent): void;
}

export type RealtimeResponseStatus = 'completed' | 'cancelled' | 'failed' | 'incomplete';

/** What a connection reports; anything the wire says that is not one of these is logged and dropped by the provider. */
export type RealtimeEvent =
  /** The final transcript of a committed user turn (it may arrive before or after the answer). */
  | { type: 'user_transcript'; text: string }
  /** A response began (after `commit`, `sendText` or `functionOutput` with `respond`). */
  | { type: 'response_started'; responseId: string }
  /** Answer audio: 16-bit little-endian mono PCM at `RealtimeModel.outputRate`. */
  | { type: 'audio'; responseId: string; pcm: Buffer }
  /** Text of what the answer says, as it is spoken (the model's transcript of its own audio). */
  | { type: 'transcript_delta'; responseId: string; text: string }
  /** The model asks for a tool; `arguments` is its raw JSON text (it may be malformed). */
  | { type: 'function_call'; responseId: string; callId: string; name: string; arguments: string }
  /** The response ended; `transcript` is all it said (empty for a function-call-only response). */
  | { type: 'response_done'; responseId: string; status: RealtimeResponseStatus; transcript: string }
  /** The model reported an error; the connection stays usable unless `closed` follows. */
  | { type: 'error'; error: VoiceError }
  /** The connection is gone (the peer closed it, the network failed, bad frames); open a new one for the next turn. */
  | { type: 'closed'; error?: VoiceError };

/** One open connection to the model. Every method is a no-op once closed. */
export interface RealtimeSession {
  /** The user's audio: 16-bit mono PCM at `RealtimeModel.inputRate`, appended as it is heard. */
  appendAudio(pcm: Int16Array): void;
  /** Drops the audio appended since the last commit (a false start, a new `listen start`). */
  clearAudio(): void;
  /** The user's turn has ended: commit the audio and ask for a response. */
  commit(): void;
  /** A typed turn (`listen detect` text): add it as the user's message and ask for a response. */
  sendText(text: string): void;
  /** Something the server said on its own (a push, a reminder): recorded as the assistant's words, no response. */
  addAssistantText(text: string): void;
  /** A function call's result; with `respond` the model is asked to go on from it. */
  functionOutput(callId: string, output: string, respond: boolean): void;
  /**
   * Stops the response being made and records that the user heard only `playedMs` of its audio
   * (the model's own record of the answer is cut there, where the protocol allows it).
   */
  cancel(playedMs: number): void;
  /** Changes the instructions or the functions offered (tools listed later, memory changed); applies from the next response. */
  update(changes: { instructions?: string; tools?: ToolSpec[] }): void;
  /** Closes the connection; no event follows. */
  close(): void;
}

export interface RealtimeModel {
  /** The provider's name, for logs and `/readyz`. */
  readonly provider: string;
  /** PCM rate of `appendAudio` (OpenAI: 24000, Qwen-Omni: 16000). */
  readonly inputRate: number;
  /** PCM rate of the answer's audio. */
  readonly outputRate: number;
  /**
   * Longest wait for a response's next event (its start, audio, its end) once one was asked for;
   * past it the conversation cancels the response and apologises. Absent: the conversation's default.
   */
  readonly responseTimeoutMs?: number;
  /**
   * Age after which a connection is replaced by a fresh one between turns (vendors end sessions
   * past a limit of their own). Absent: the conversation's default.
   */
  readonly maxSessionMs?: number;
  /**
   * Function calls one response may ask for; past it the conversation cancels the response and
   * apologises. Absent: the conversation's default (8).
   */
  readonly maxFunctionCallsPerResponse?: number;
  /** Opens a connection; rejects (a `VoiceError`) when it cannot be opened or configured. */
  open(opts: RealtimeSessionOptions): Promise<RealtimeSession>;
  /** Releases what the model holds beyond its sessions (a pool, a timer), when it has any; called once nobody uses it. */
  close?(): Promise<void> | void;
}
