/**
 * @module What one round of tool results means for the turn, as one value: back to the model
 * (observe), media played (the turn ends), or the turn ends with the words to say. A dispatcher
 * produces it (voice/dispatch); without one the results' flags do (`decideByFlags`). The ReAct
 * loop (react.ts) is the one place that acts on it: it thinks again, or ends the turn, speaking
 * and recording the end text like the model's own words.
 */
import type { ToolResult } from '../mcp/contract/tool-source.ts';
import { spokenResultText } from './tool-results.ts';
import type { ToolCall } from './types.ts';

export interface ToolCallResult {
  call: ToolCall;
  result: ToolResult;
}

/** Why a result's flags end the turn. */
export type FlagEndReason = 'final' | 'no_further_response' | 'silence';

export type RoundDecision =
  /** Nothing ends the turn: the results are in the history and the model thinks again. */
  | { next: 'observe' }
  /**
   * Media from the results was played: the turn ends. `said`: the sentences spoken while playing
   * (a note for each item that could not play), which enter the history.
   */
  | { next: 'played'; said: string[] }
  /** A result's flags end the turn; `say` ('' for none) is spoken first and enters the history. */
  | { next: 'end'; reason: FlagEndReason; say: string };

/**
 * The `ToolAction` flags of a round as a decision: `silenceLLM` ends the turn without a word,
 * `final` then `noFurtherResponse` end it with the flagged results' own text; no flag observes.
 */
export function decideByFlags(results: readonly ToolCallResult[]): RoundDecision {
  const actions = results.flatMap((r) => (r.result.action ? [r.result.action] : []));
  if (actions.some((a) => a.silenceLLM)) return { next: 'end', reason: 'silence', say: '' };
  const reason: FlagEndReason | undefined = actions.some((a) => a.final)
    ? 'final'
    : actions.some((a) => a.noFurtherResponse)
      ? 'no_further_response'
      : undefined;
  if (!reason) return { next: 'observe' };
  const say = results
    .filter((r) => r.result.action?.final || r.result.action?.noFurtherResponse)
    .map((r) => spokenResultText(r.result))
    .filter((t) => t !== '')
    .join('\n');
  return { next: 'end', reason, say };
}
