/**
 * @module A turn's messages as stored rows and back. A tool call is kept in short form (its name,
 * arguments and the start of its result, one row with role `tool`); given back, it becomes a
 * line of the assistant's text, since the model's tool-call ids are not kept.
 */
import type { ChatMessage } from '../../llm/types.ts';
import type { StoredTurn, TurnRole } from '../../store/memory.ts';

/** Characters kept of a tool call's arguments and of its result. */
const TOOL_ARGS_CHARS = 200;
const TOOL_RESULT_CHARS = 300;

function short(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}

export function rowsOfTurn(messages: readonly ChatMessage[]): Array<{ role: TurnRole; text: string }> {
  const results = new Map<string, string>();
  for (const m of messages) if (m.role === 'tool') results.set(m.toolCallId, m.content);
  const rows: Array<{ role: TurnRole; text: string }> = [];
  for (const m of messages) {
    if (m.role === 'user' && m.content.trim() !== '') rows.push({ role: 'user', text: m.content });
    if (m.role !== 'assistant') continue;
    for (const c of m.toolCalls ?? []) {
      const result = results.get(c.id);
      rows.push({
        role: 'tool',
        text: `${c.name}(${short(c.arguments, TOOL_ARGS_CHARS)})${result !== undefined ? ` → ${short(result, TOOL_RESULT_CHARS)}` : ''}`,
      });
    }
    if (m.content.trim() !== '') rows.push({ role: 'assistant', text: m.content });
  }
  return rows;
}

/**
 * The stored rows as history messages, limited to the newest `turns` user turns and `chars`
 * characters (whole turns, the oldest dropped first). A history never starts with an answer.
 */
export function messagesOfRows(rows: readonly StoredTurn[], turns: number, chars: number): ChatMessage[] {
  const grouped: ChatMessage[][] = [];
  for (const r of rows) {
    if (r.role === 'user') {
      grouped.push([{ role: 'user', content: r.text }]);
      continue;
    }
    const current = grouped.at(-1);
    if (!current) continue;
    current.push({ role: 'assistant', content: r.role === 'tool' ? `(tool used: ${r.text})` : r.text });
  }
  let kept = grouped.slice(Math.max(0, grouped.length - turns));
  const size = (t: ChatMessage[]): number => t.reduce((n, m) => n + m.content.length, 0);
  let total = kept.reduce((n, t) => n + size(t), 0);
  while (kept.length > 0 && total > chars) {
    total -= size(kept[0] ?? []);
    kept = kept.slice(1);
  }
  return kept.flat();
}
