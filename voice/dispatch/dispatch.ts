/**
 * @module The seam through which tool results reach the device as media. After each Act the ReAct
 * loop hands the round's results to a TurnDispatcher, which plays their media on the turn's audio
 * out and returns what the round means for the turn (llm/round-decision.ts): the loop, not the
 * dispatcher, acts on it. The concrete dispatcher is result-dispatcher.ts beside it.
 */
import type { RoundDecision, ToolCallResult } from '../../llm/round-decision.ts';

/** The turn's audio output, as a dispatcher uses it: media is played, sentences spoken. */
export interface DispatchContext {
  /**
   * Plays PCM after the words so far, captioned with `text` (the conversation's AudioOut is one;
   * stated here so that this folder does not import the conversation, which imports it).
   */
  out: { play(text: string | null, pcm: AsyncIterable<Int16Array>, onFirstFrame?: () => void): Promise<void> };
  /** Speaks everything queued so far before media plays (the model's text before the tool call). */
  flushSpeech(): Promise<void>;
  /** Queues a sentence to speak (a note about a media item that could not play). */
  speak(text: string): void;
  signal: AbortSignal;
  /** Downlink PCM rate. */
  sampleRate: number;
}

export interface TurnDispatcher {
  /** Plays the round's media, if any, and says what the round means for the turn. */
  dispatch(results: ToolCallResult[], ctx: DispatchContext): Promise<RoundDecision>;
}
