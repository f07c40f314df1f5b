/**
 * @module What a realtime connection is told when it opens: the agent's system prompt with the
 * memory block (as the cascade's history heads its requests), then the recent turns of the
 * session's history as text, so a fresh connection (the first turn, a reconnect) knows what was
 * said. Tool calls and results are left out: the words are what the model needs to go on.
 */
import type { ChatMessage } from '../../llm/types.ts';

/** Characters of earlier turns put in the instructions at most (the newest kept). */
export const MAX_RECENT_CHARS = 8_000;

export function realtimeInstructions(messages: readonly ChatMessage[], maxRecentChars = MAX_RECENT_CHARS): string {
  const prompt = messages[0]?.role === 'system' ? messages[0].content : '';
  const lines: string[] = [];
  let size = 0;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i] as ChatMessage;
    if ((m.role !== 'user' && m.role !== 'assistant') || m.content.trim() === '') continue;
    const line = `${m.role === 'user' ? 'User' : 'Assistant'}: ${m.content.trim()}`;
    if (size + line.length > maxRecentChars) break;
    size += line.length;
    lines.unshift(line);
  }
  if (lines.length === 0) return prompt;
  const recent = `The conversation so far (most recent last):\n${lines.join('\n')}`;
  return prompt === '' ? recent : `${prompt}\n\n${recent}`;
}
