/**
 * @module The seam through which tool results reach the device as media. After each Act the ReAct
 * loop hands the round's results to a TurnDispatcher, which may play audio on the turn's AudioOut
 * and decides whether the loop goes on. The concrete dispatcher is result-dispatcher.ts beside it.
 */
import type { DispatchDecision, ToolCallResult } from '../../llm/react.ts';
import type { AudioOut } from '../conversation/audio-out.ts';

export interface DispatchContext {
  out: AudioOut;
  /** Speaks everything queued so far before media plays (the model's text before the tool call). */
  flushSpeech(): Promise<void>;
  /** Queues a sentence to speak (a media item that could not play). */
  speak(text: string): void;
  signal: AbortSignal;
  /** Downlink PCM rate. */
  sampleRate: number;
}

export interface TurnDispatcher {
  dispatch(results: ToolCallResult[], ctx: DispatchContext): Promise<DispatchDecision>;
}
