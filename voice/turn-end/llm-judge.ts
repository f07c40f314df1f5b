/**
 * @module The optional second opinion of the end of turn (`vad.llmJudge`): for a transcript the
 * rules found nothing to say about (no unfinished ending, no closing particle), the agent's model
 * is asked whether the user has finished. One short request per pause that reaches
 * `completeSilenceMs` with such a transcript, its answer read from the first word; until it
 * answers the utterance waits as with no transcript (`minSilenceMs`), so the judge can only make
 * that wait shorter (a "complete") or longer (an "unfinished"), and a slow or failing model
 * changes nothing. What it costs: the model's time to first token on every such pause, and one
 * request's tokens (about 80 of prompt).
 */
import { linkedScope } from '../../core/abort.ts';
import { toVoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import type { LlmClient } from '../../llm/types.ts';
import type { Completeness } from './completeness.ts';

const INSTRUCTIONS =
  'You decide whether someone talking to a voice assistant has finished what they wanted to say, ' +
  'or paused and is about to go on. You get the words heard so far. Answer with one word: ' +
  '"complete" if it is a whole request or sentence, "unfinished" if it is cut off.';

const ANSWER = /\b(complete|unfinished|incomplete)\b/i;

/** Asks whether `text` is finished; 'unknown' when the model does not answer in time or in words we read. */
export type CompletenessJudge = (text: string, signal: AbortSignal) => Promise<Completeness>;

/** `llm`: the model to ask, as the session's agent has it now. */
export function createLlmJudge(llm: () => LlmClient, opts: { timeoutMs: number; log: Logger }): CompletenessJudge {
  return async (text, signal) => {
    const scope = linkedScope(signal, { timeoutMs: opts.timeoutMs, what: 'end-of-turn judge' });
    const started = performance.now();
    let answer = '';
    try {
      const events = llm().stream({
        messages: [
          { role: 'system', content: INSTRUCTIONS },
          { role: 'user', content: text },
        ],
        tools: [],
        signal: scope.signal,
      });
      for await (const e of events) {
        if (e.type === 'text_delta') answer += e.text;
        // The first word decides: no need to wait for the rest.
        if (ANSWER.test(answer) || answer.length > 40) break;
      }
    } catch (err) {
      const e = toVoiceError(err);
      if (!signal.aborted) opts.log.debug({ code: e.code, err: e.message }, 'end-of-turn judge gave no answer');
      return 'unknown';
    } finally {
      scope.dispose();
    }
    const word = ANSWER.exec(answer)?.[1]?.toLowerCase();
    const verdict: Completeness = word === 'complete' ? 'complete' : word === undefined ? 'unknown' : 'unfinished';
    opts.log.debug({ verdict, ms: Math.round(performance.now() - started), text }, 'end-of-turn judge answered');
    return verdict;
  };
}
