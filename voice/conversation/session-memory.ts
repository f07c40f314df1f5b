/**
 * @module What a session's conversation asks of the device's memory (the server keeps it in the
 * store): the turns it had with an agent before, given back at the start of a session or when
 * the device's agent changes, the block of remembered facts and summary for the system prompt, and
 * each finished turn to keep. Recording never waits: the memory writes in batches, after the
 * answer.
 */
import type { ChatMessage } from '../../llm/types.ts';

export type MemoryMode = 'none' | 'history' | 'summary';

export interface SessionMemory {
  /**
   * Switches to the device's memory with `agent` (loaded in the background since the session
   * started, when it is the device's agent then): the earlier turns to put back into the history.
   */
  use(agent: string, mode: MemoryMode): Promise<ChatMessage[]>;
  /** The system prompt's memory block (facts and summary, as the user's words); '' when none. */
  block(): string;
  /** Keeps a finished turn's messages (user, assistant, tool calls in short form); not awaited. */
  record(messages: readonly ChatMessage[]): void;
  /**
   * True once after the device's memory with its agent was deleted (the user said "forget
   * everything"): the session's history is emptied too, and that turn is not recorded.
   */
  takeCleared(): boolean;
  /** The session ended: the summary is written in the background. */
  close(): void;
}
