/**
 * @module What the voice conversation needs from the process: the shared models and providers
 * (created once in server/deps.ts) and the per-session tool wiring.
 */
import type { Clock } from '../../core/clock.ts';
import type { Logger } from '../../core/logger.ts';
import type { Asr } from '../../audio/asr/asr.ts';
import type { Tts } from '../../audio/tts/tts.ts';
import type { MediaEngine } from '../../audio/media/media.ts';
import type { LlmClient } from '../../llm/types.ts';
import type { ToolSource } from '../../mcp/contract/tool-source.ts';
import type { TurnDispatcher } from '../dispatch/dispatch.ts';
import type { SessionInfo } from '../session/conversation.ts';
import type { VoiceConfig } from './voice-config.ts';
import type { ProfileSource, ToolPolicy } from './turn-profile.ts';
import type { SessionMemory } from './session-memory.ts';

/** Per-session tools: what the session's ReAct loop may call. */
export interface SessionTools {
  tools: ToolSource;
  /** Routes tool results after Act (audio, resource links, flags). */
  dispatcher?: TurnDispatcher;
  /** Context strings (e.g. MCP resources) injected before Think. */
  context?(signal: AbortSignal): Promise<string[]>;
  close?(): Promise<void>;
}

export interface SessionToolsInput {
  info: SessionInfo;
  log: Logger;
  /** The device's own MCP tools, when it has any. */
  deviceTools?: ToolSource;
  /** Which tools the current turn's profile allows (read at each listing and call); absent: all. */
  policy?: () => ToolPolicy | undefined;
  /** The device's memory, for the memory tools; absent: none offered. */
  memory?: SessionMemory;
}

/** Observers for metrics (`/metrics`); all optional. */
export interface TurnObserver {
  onTurn?(t: TurnTimings): void;
  /** An early start was used (its end of speech confirmed) or dropped (the user spoke on). */
  onEarlyStart?(result: 'used' | 'dropped'): void;
  /** A turn the device asked for was not started: the session's turn budget was spent. */
  onTurnRefused?(): void;
}

export interface TurnTimings {
  /** How the turn started. */
  source: 'voice' | 'text' | 'wake_word' | 'notice';
  outcome: 'answered' | 'no_speech' | 'aborted' | 'failed' | 'greeted';
  /** End of speech (server's decision) → the transcript. */
  asrMs?: number;
  /** The model's request → its first token (the provider's own latency). */
  llmFirstTokenMs?: number;
  /**
   * End of speech (server's decision) → the answer's first text to the voice: its first sentence
   * cut from the model's text, or, with a voice that takes text in pieces, the first text pushed.
   */
  firstSentenceMs?: number;
  /** End of speech (server's decision) → the voice's first audio of the answer (a streaming voice's first bytes). */
  ttsFirstAudioMs?: number;
  /** End of speech (server's decision) → first audio frame sent. */
  firstAudioMs?: number;
  /**
   * The turn started this long before the end of speech was confirmed (an early start at a
   * pause); the stages above that finished before it count as 0.
   */
  earlyStartMs?: number;
  /**
   * Silence heard after the last voiced frame before the end of the utterance was decided (the
   * end of turn's wait; voice turns in auto and realtime mode). Not part of the stages above,
   * which start at that decision.
   */
  endOfTurnMs?: number;
  totalMs: number;
  lateFrames: number;
  /** Intervals between the downlink frames sent, and those over 65 ms (the pacer's count). */
  frameIntervals: number;
  lateIntervals: number;
  tools: Array<{ name: string; ms: number; isError: boolean }>;
}

export interface VoiceDeps {
  config: VoiceConfig;
  log: Logger;
  /** Opens each session's media state (codecs, VAD, embedded TTS) on a worker. */
  media: MediaEngine;
  asr: Asr;
  tts: Tts;
  /** Embedded TTS used for apologies when the primary (remote) TTS is the thing failing. */
  fallbackTts?: Tts;
  llm: LlmClient;
  toolsFor(input: SessionToolsInput): SessionTools;
  /**
   * The device's current assistant, asked at the start of every turn: its prompt, texts, model,
   * recogniser, voice and tools replace the ones above for that turn. Absent: the ones above.
   */
  profileFor?: ProfileSource;
  /**
   * The camera endpoint the server hosts, for one session: its URL and a token bound to the
   * session's device, advertised in the device MCP `initialize`; `release` revokes the token when
   * the session ends. Absent, or null: none (`deviceMcp.vision.url`, when set, is advertised instead).
   */
  visionFor?: (info: SessionInfo) => { url: string; token: string; release(): void } | null;
  /** The device's memory for one session (absent, or undefined for a session without a Device-Id: nothing kept). */
  memoryFor?: (info: SessionInfo) => SessionMemory | undefined;
  observer?: TurnObserver;
  /**
   * What the turns are timed on (end of speech, transcript, first sentence and frame, the wait
   * before `tts stop`). Default: the real clock; a test may pass one it advances by hand.
   */
  clock?: Clock;
}
