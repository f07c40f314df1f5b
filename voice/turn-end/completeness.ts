/**
 * @module Does a transcript look like a whole sentence? The verdict the end of turn waits by
 * (`end-of-turn.ts`): `complete` ends the turn after a short silence, `unfinished` waits longer,
 * `unknown` (no words yet) waits the plain silence. The language is read from the text itself
 * (Han characters: Chinese rules; otherwise English), so an agent's language setting and a
 * code-switching speaker need nothing more. The words are in `completeness-rules.ts`.
 *
 * Punctuation from the recogniser is ignored: streaming recognisers put a full stop at every
 * pause they segment on, which is exactly where the sentence may go on.
 */
import {
  EN_LONE_OPENERS,
  EN_NUMBER_WORDS,
  EN_QUESTION_OPENERS,
  EN_STRANDED_MAX_WORDS,
  EN_STRANDED_PREPOSITIONS,
  EN_UNFINISHED_LAST_PAIRS,
  EN_UNFINISHED_LAST_WORDS,
  ZH_COMPLETE_ENDINGS,
  ZH_LONE_OPENERS,
  ZH_OBJECT_BEFORE_VERB,
  ZH_PREDICATE_CHARS,
  ZH_UNFINISHED_ENDINGS,
  ZH_VERBS_WANTING_OBJECT,
} from './completeness-rules.ts';

export type Completeness = 'complete' | 'unfinished' | 'unknown';

const HAN = /\p{Script=Han}/u;
/** Punctuation and spaces (ASCII and CJK) dropped before judging. */
const PUNCTUATION = /[\p{P}\p{S}\s]+/gu;
const ZH_SORTED_UNFINISHED = [...ZH_UNFINISHED_ENDINGS].sort((a, b) => b.length - a.length);
/** "X的Y" at the end, Y one to three characters (a short topic noun). */
const ZH_TOPIC_PHRASE = /的[^的]{1,3}$/u;
/** The last clause: what follows the recogniser's last comma or full stop. */
const ZH_CLAUSE_BREAK = /[，,。.！!？?；;、]/u;
const DIGITS = /^\d+$/;

/** The verdict for one transcript (a partial or a final). */
export function judgeCompleteness(text: string): Completeness {
  return judgeWithRule(text).verdict;
}

/**
 * The verdict and whether a rule made it (`byRule`), or it is only the default "complete" of a
 * transcript no rule had anything to say about (what the optional model judge is asked about).
 */
export function judgeWithRule(text: string): { verdict: Completeness; byRule: boolean } {
  const trimmed = text.trim();
  if (trimmed === '') return { verdict: 'unknown', byRule: true };
  const verdict = HAN.test(trimmed) ? judgeChinese(trimmed) : judgeEnglish(trimmed);
  return verdict === DEFAULT ? { verdict: 'complete', byRule: false } : { verdict, byRule: true };
}

/** What a rule-less transcript gets from the language functions below. */
const DEFAULT = 'default';
type Judged = Completeness | typeof DEFAULT;

function judgeEnglish(text: string): Judged {
  const words = text
    .toLowerCase()
    .replace(/[’`]/g, "'")
    .split(/[^\p{L}\p{N}']+/u)
    .map((w) => w.replace(/^'+|'+$/g, ''))
    .filter((w) => w !== '');
  const last = words.at(-1);
  if (last === undefined) return 'unknown';
  if (EN_LONE_OPENERS.has(words.join(' '))) return 'unfinished';
  // "where are you from": a short question may end on its preposition.
  const stranded =
    words.length <= EN_STRANDED_MAX_WORDS &&
    EN_QUESTION_OPENERS.has(words[0] ?? '') &&
    EN_STRANDED_PREPOSITIONS.has(last);
  if (stranded) return 'complete';
  if (EN_UNFINISHED_LAST_WORDS.has(last)) return 'unfinished';
  if (words.length >= 2 && EN_UNFINISHED_LAST_PAIRS.has(`${words.at(-2)} ${last}`)) return 'unfinished';
  // A number being dictated: the last two words are both digits or number words.
  const isNumber = (w: string | undefined): boolean => w !== undefined && (DIGITS.test(w) || EN_NUMBER_WORDS.has(w));
  if (isNumber(last) && isNumber(words.at(-2))) return 'unfinished';
  return DEFAULT;
}

function judgeChinese(text: string): Judged {
  const clause =
    text
      .split(ZH_CLAUSE_BREAK)
      .filter((c) => c.replace(PUNCTUATION, '') !== '')
      .at(-1) ?? text;
  const bare = clause.replace(PUNCTUATION, '');
  const whole = text.replace(PUNCTUATION, '');
  if (bare === '') return 'unknown';
  if (ZH_COMPLETE_ENDINGS.some((e) => bare.endsWith(e))) return 'complete';
  if (ZH_LONE_OPENERS.has(whole)) return 'unfinished';
  if (ZH_SORTED_UNFINISHED.some((e) => bare.endsWith(e))) return 'unfinished';
  if (ZH_VERBS_WANTING_OBJECT.some((v) => bare.endsWith(v)) && !ZH_OBJECT_BEFORE_VERB.test(bare)) return 'unfinished';
  // Digits at the end of a run of digits: a number being read out ("我的电话是一三八").
  if (/[0-9零一二三四五六七八九幺两]{3,}$/u.test(bare) && !/[点分号个岁]$/u.test(bare)) return 'unfinished';
  // A topic phrase with no verb in its clause waits for what is said about it.
  if (ZH_TOPIC_PHRASE.test(bare) && ![...bare].some((c) => ZH_PREDICATE_CHARS.includes(c))) return 'unfinished';
  return DEFAULT;
}
