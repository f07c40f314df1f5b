/**
 * @module One session's conversation history, bounded by turns. A turn is a user message and
 * everything that answered it (assistant text, tool calls, tool results); whole turns are dropped
 * from the oldest end, so an assistant `tool_calls` message is never separated from its results.
 * The system prompt is produced on every `messages()` call so `{date}`-style context stays current.
 */
import type { ChatMessage } from './types.ts';

export interface HistoryOptions {
  /** The system prompt, or a function that builds it (called on every `messages()`). Empty: none sent. */
  systemPrompt: string | (() => string);
  /** Turns kept, the current one included (>= 1). */
  historyTurns: number;
  /** Optional budget on the characters of all kept messages; oldest turns go first (the current turn always stays). */
  maxChars?: number;
}

export interface History {
  /** The system prompt followed by the kept turns, ready for the model. */
  messages(): ChatMessage[];
  /** Starts a new turn with the user's words and drops the oldest turns beyond the bound. */
  addUser(text: string): void;
  /** Appends assistant or tool messages to the current turn (a turn is started if there is none, e.g. a greeting). */
  append(...messages: ChatMessage[]): void;
  /** Number of turns kept. */
  readonly turns: number;
  clear(): void;
  /**
   * Returns a function that puts the history back as it is now, trimmed turns included: work
   * done for a turn that is then dropped (an early start the user spoke over) leaves no trace.
   */
  checkpoint(): () => void;
}

function size(m: ChatMessage): number {
  let n = m.content.length;
  if (m.role === 'assistant') for (const c of m.toolCalls ?? []) n += c.name.length + c.arguments.length;
  return n;
}

/**
 * Drops what the API would reject: tool results whose call is not in the history, and tool calls
 * that never got results (e.g. a turn interrupted mid-Act). Text of such an assistant message stays.
 */
function consistent(messages: ChatMessage[]): ChatMessage[] {
  const answered = new Set(messages.flatMap((m) => (m.role === 'tool' ? [m.toolCallId] : [])));
  const asked = new Set<string>();
  const out: ChatMessage[] = [];
  for (const m of messages) {
    if (m.role === 'assistant' && m.toolCalls && m.toolCalls.length > 0) {
      if (m.toolCalls.every((c) => answered.has(c.id))) {
        for (const c of m.toolCalls) asked.add(c.id);
        out.push(m);
      } else if (m.content !== '') {
        out.push({ role: 'assistant', content: m.content });
      }
    } else if (m.role === 'tool') {
      if (asked.has(m.toolCallId)) out.push(m);
    } else {
      out.push(m);
    }
  }
  return out;
}

export function createHistory(opts: HistoryOptions): History {
  const maxTurns = Math.max(1, Math.floor(opts.historyTurns));
  let turns: ChatMessage[][] = [];

  function trim(): void {
    if (turns.length > maxTurns) turns = turns.slice(turns.length - maxTurns);
    if (opts.maxChars !== undefined) {
      let total = turns.reduce((n, t) => n + t.reduce((k, m) => k + size(m), 0), 0);
      while (turns.length > 1 && total > opts.maxChars) {
        const dropped = turns.shift() ?? [];
        total -= dropped.reduce((k, m) => k + size(m), 0);
      }
    }
  }

  return {
    messages() {
      const system = typeof opts.systemPrompt === 'function' ? opts.systemPrompt() : opts.systemPrompt;
      const body = consistent(turns.flat());
      return system === '' ? body : [{ role: 'system', content: system }, ...body];
    },
    addUser(text) {
      turns.push([{ role: 'user', content: text }]);
      trim();
    },
    append(...messages) {
      for (const m of messages) {
        if (m.role === 'user') {
          turns.push([m]);
          continue;
        }
        if (m.role === 'system') continue; // the system prompt is not history
        const last = turns.at(-1);
        if (last) last.push(m);
        else turns.push([m]);
      }
      trim();
    },
    get turns() {
      return turns.length;
    },
    clear() {
      turns = [];
    },
    checkpoint() {
      const saved = turns.map((t) => [...t]);
      return () => {
        turns = saved.map((t) => [...t]);
      };
    },
  };
}
