/**
 * @module The one place that decides when a spoken utterance is over (auto and realtime listen
 * modes; in manual mode the device's `listen stop` decides). The VAD measures the silence after
 * the last voiced frame; the transcript so far (a streaming recogniser's partial, or an early
 * start's batch transcript) says how long that silence must be:
 *   complete   → `completeSilenceMs` (short: the answer can start),
 *   unknown    → `minSilenceMs` (no words yet, or meaning-based ending is off),
 *   unfinished → `unfinishedSilenceMs` (a trailing "and", "to", "um", "因为", "的": the user is
 *                still thinking).
 * The longest of them is also the VAD's own hard end (`speech_end`), so an utterance never waits
 * more than that. Each verdict is logged at debug with the text that gave it. With a judge
 * (`vad.llmJudge`), a transcript no rule had anything to say about is `unknown` until the model has
 * answered, asked once the silence reaches `completeSilenceMs` (llm-judge.ts).
 */
import type { Logger } from '../../core/logger.ts';
import { judgeWithRule, type Completeness } from './completeness.ts';
import type { CompletenessJudge } from './llm-judge.ts';

export interface EndOfTurnSettings {
  /** Silence that ends an utterance whose transcript looks complete; 0: meaning is not used. */
  completeSilenceMs: number;
  /** Silence that ends an utterance with no transcript yet. */
  minSilenceMs: number;
  /** Silence that ends an utterance whose transcript ends unfinished (at least `minSilenceMs`). */
  unfinishedSilenceMs: number;
}

/** The silence after which the VAD itself ends speech, whatever the transcript says. */
export function longestSilenceMs(s: EndOfTurnSettings): number {
  return s.completeSilenceMs > 0 ? Math.max(s.minSilenceMs, s.unfinishedSilenceMs) : s.minSilenceMs;
}

/** The shortest silence any decision looks at: from there on the listener measures the silence. */
export function shortestSilenceMs(s: EndOfTurnSettings, earlyStartMs: number): number {
  const marks = [s.minSilenceMs, s.completeSilenceMs, earlyStartMs].filter((m) => m > 0);
  return Math.min(...marks);
}

export class EndOfTurn {
  readonly #s: EndOfTurnSettings;
  readonly #log: Logger;
  readonly #judge: CompletenessJudge | undefined;
  #verdict: Completeness = 'unknown';
  #text = '';
  /** The current text waits for the judge, not asked yet. */
  #judgeDue = false;
  /** The judge's request for the current text. */
  #asking: AbortController | undefined;
  #onChange: () => void = () => {};

  constructor(settings: EndOfTurnSettings, log: Logger, judge?: CompletenessJudge) {
    this.#s = settings;
    this.#log = log;
    this.#judge = judge;
  }

  /** Told when a verdict changes by itself (the judge answered), so the silence is looked at again. */
  onChange(listener: () => void): void {
    this.#onChange = listener;
  }

  get verdict(): Completeness {
    return this.#verdict;
  }

  /** The transcript the verdict was made from ('' before any). */
  get text(): string {
    return this.#text;
  }

  /** A new utterance: no transcript yet. */
  reset(): void {
    this.#verdict = 'unknown';
    this.#text = '';
    this.#judgeDue = false;
    this.#asking?.abort();
    this.#asking = undefined;
  }

  /** The latest transcript of the utterance so far (a partial or an early start's). */
  transcript(text: string): Completeness {
    if (text === this.#text) return this.#verdict;
    this.#text = text;
    this.#asking?.abort();
    this.#asking = undefined;
    this.#judgeDue = false;
    let verdict: Completeness = 'unknown';
    if (this.#s.completeSilenceMs > 0) {
      const judged = judgeWithRule(text);
      verdict = judged.verdict;
      if (this.#judge && !judged.byRule) {
        verdict = 'unknown';
        this.#judgeDue = true;
      }
    }
    if (verdict !== this.#verdict) this.#log.debug({ verdict, text }, 'end of turn: transcript judged');
    this.#verdict = verdict;
    return verdict;
  }

  /** The silence that ends the utterance under the current verdict. */
  get silenceNeededMs(): number {
    if (this.#verdict === 'complete') return this.#s.completeSilenceMs;
    if (this.#verdict === 'unfinished') return Math.max(this.#s.minSilenceMs, this.#s.unfinishedSilenceMs);
    return this.#s.minSilenceMs;
  }

  /** True when `silenceMs` of silence after the last voiced frame ends the utterance. */
  ends(silenceMs: number): boolean {
    if (this.#judgeDue && silenceMs >= this.#s.completeSilenceMs) this.#ask();
    return silenceMs >= this.silenceNeededMs;
  }

  #ask(): void {
    const judge = this.#judge;
    if (!judge) return;
    this.#judgeDue = false;
    const text = this.#text;
    const asking = new AbortController();
    this.#asking = asking;
    void judge(text, asking.signal).then((verdict) => {
      if (asking.signal.aborted || this.#text !== text || verdict === 'unknown') return;
      this.#asking = undefined;
      this.#verdict = verdict;
      this.#log.debug({ verdict, text }, 'end of turn: the judge decided');
      this.#onChange();
    });
  }
}
