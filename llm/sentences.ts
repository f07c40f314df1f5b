/**
 * @module Cuts streamed model text into speakable pieces as it arrives, so TTS can start on the
 * first piece while the model is still writing.
 *
 * Rules:
 * - cut after sentence punctuation: Chinese 。！？； at once; Latin . ! ? ; only when followed by a
 *   space, a CJK character or the end of the stream (so "3.14", "e.g.", "Mr. Smith" stay whole);
 *   and at line breaks;
 * - the first piece may also end at a comma (，、, ：:) once it weighs `firstCutMinChars`, for a
 *   fast first sound;
 * - a piece weighing less than `minChars` is not cut off: it merges with what follows;
 * - a piece never grows past `maxChars`: then it is cut at the last comma or space;
 * - never cut inside a markdown link or inline code; pieces come out with markdown and emoji stripped.
 *
 * Weights are `spokenWeight` units: a Latin letter or digit 1, a CJK character 2.
 */
import { spokenWeight, toSpeakable } from './speakable.ts';

export interface SentenceCutterOptions {
  /** Weight the first piece needs before it may end at a comma. Default 10 (about 2 words, or 5 Chinese characters). */
  firstCutMinChars?: number;
  /** Smallest piece weight emitted on its own. Default 4 ("Okay.", "好的。"). */
  minChars?: number;
  /** Largest piece weight before a forced cut. Default 160. */
  maxChars?: number;
}

export interface SentenceCutter {
  /** Adds streamed text; returns the pieces that are complete now (already cleaned for TTS). */
  push(delta: string): string[];
  /** Ends the stream; returns whatever is left. The cutter can then be reused. */
  flush(): string[];
}

const CJK_END = new Set(['。', '！', '？', '；', '…']);
const LATIN_END = new Set(['.', '!', '?', ';']);
const CJK_SOFT = new Set(['，', '、', '：']);
const LATIN_SOFT = new Set([',', ':']);
/** Characters that belong to the sentence they follow: closing quotes and brackets, repeated enders. */
const CLOSERS = new Set([
  '"',
  "'",
  '”',
  '’',
  '」',
  '』',
  '）',
  ')',
  '】',
  ']',
  '》',
  '.',
  '!',
  '?',
  '。',
  '！',
  '？',
  '…',
]);
const WIDE = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\u3000-\u303f\uff00-\uffef]/u;
const SPACE = /\s/;

/** Words whose trailing dot is not a sentence end. */
const ABBREVIATIONS = new Set([
  'mr',
  'mrs',
  'ms',
  'dr',
  'prof',
  'sr',
  'jr',
  'st',
  'vs',
  'etc',
  'e.g',
  'i.e',
  'approx',
  'no',
  'fig',
  'inc',
  'ltd',
  'co',
  'mt',
  'ave',
  'dept',
  'est',
  'u.s',
  'u.k',
  'a.m',
  'p.m',
]);

/** True when the '.' at `i` ends an abbreviation, an initial or an ordered-list number. */
function dotIsNotAnEnd(buf: string, i: number): boolean {
  let j = i;
  while (j > 0 && /[\p{L}\p{N}.]/u.test(buf[j - 1] ?? '')) j--;
  const word = buf.slice(j, i).toLowerCase();
  if (word === '') return false;
  if (ABBREVIATIONS.has(word)) return true;
  if (/^\p{L}$/u.test(word) && /\p{Lu}/u.test(buf[i - 1] ?? '')) return true; // "J. K. Rowling"
  if (/^(\p{L}\.)+\p{L}$/u.test(word)) return true; // "U.S.A" style
  // "1." at the start of a line is a list number, not a sentence.
  if (/^\d+$/.test(word)) {
    const lineStart = buf.lastIndexOf('\n', j - 1) + 1;
    return buf.slice(lineStart, j).trim() === '';
  }
  return false;
}

/** Markdown links and inline code must not be split between pieces (the stripper needs both halves). */
export function markupBalanced(piece: string): boolean {
  const ticks = piece.split('`').length - 1;
  if (ticks % 2 !== 0) return false;
  const open = piece.split('[').length - 1;
  const close = piece.split(']').length - 1;
  if (open > close) return false;
  return !/\]\([^)]*$/.test(piece);
}

/** Index just past any closers that follow position `i`. */
function absorbClosers(buf: string, i: number): number {
  let e = i;
  while (e < buf.length && CLOSERS.has(buf[e] ?? '')) e++;
  return e;
}

export function createSentenceCutter(opts: SentenceCutterOptions = {}): SentenceCutter {
  const firstCutMin = opts.firstCutMinChars ?? 10;
  const minChars = opts.minChars ?? 4;
  const maxChars = Math.max(opts.maxChars ?? 160, minChars + 1);
  let buf = '';
  let firstDone = false;

  /** The end index of the next acceptable cut, or -1; `final` means no more text will come. */
  function findCut(final: boolean): number {
    for (let i = 0; i < buf.length; i++) {
      const c = buf[i] ?? '';
      let end = -1;
      let soft = false;
      if (c === '\n') {
        end = i + 1;
      } else if (CJK_END.has(c)) {
        end = absorbClosers(buf, i + 1);
      } else if (LATIN_END.has(c)) {
        const e = absorbClosers(buf, i + 1);
        if (e >= buf.length) {
          if (!final) return -1; // the next character decides ("3." vs "3.14")
          end = e;
        } else {
          const next = buf[e] ?? '';
          if ((SPACE.test(next) || WIDE.test(next)) && !(c === '.' && dotIsNotAnEnd(buf, i))) end = e;
        }
      } else if (!firstDone && CJK_SOFT.has(c)) {
        end = i + 1;
        soft = true;
      } else if (!firstDone && LATIN_SOFT.has(c)) {
        if (i + 1 >= buf.length) {
          if (!final) return -1; // "1,000" and "12:30" must not be cut
        } else if (SPACE.test(buf[i + 1] ?? '') || WIDE.test(buf[i + 1] ?? '')) {
          end = i + 1;
          soft = true;
        }
      }
      if (end < 0) continue;
      const piece = buf.slice(0, end);
      if (spokenWeight(toSpeakable(piece)) >= (soft ? firstCutMin : minChars) && markupBalanced(piece)) return end;
      if (c !== '\n') i = end - 1;
    }
    return -1;
  }

  /** Forced cut for a long run without punctuation: last comma or space, else a hard cut. */
  function forcedCut(): number {
    if (spokenWeight(buf) <= maxChars) return -1;
    // Find where the weight reaches maxChars, then look back for a soft break.
    let w = 0;
    let limit = buf.length;
    for (let i = 0; i < buf.length; i++) {
      const ch = buf[i] ?? '';
      w += spokenWeight(ch);
      if (w > maxChars) {
        limit = i;
        break;
      }
    }
    for (let i = limit; i > 0; i--) {
      const ch = buf[i - 1] ?? '';
      if ((SPACE.test(ch) || CJK_SOFT.has(ch) || LATIN_SOFT.has(ch)) && spokenWeight(buf.slice(0, i)) >= minChars)
        return i;
    }
    // Do not split a surrogate pair.
    const code = buf.charCodeAt(limit - 1);
    return code >= 0xd800 && code <= 0xdbff ? limit + 1 : limit;
  }

  function drain(final: boolean): string[] {
    const out: string[] = [];
    for (;;) {
      let end = findCut(final);
      if (end < 0) end = forcedCut();
      if (end <= 0) break;
      const piece = toSpeakable(buf.slice(0, end));
      buf = buf.slice(end);
      if (piece !== '') {
        out.push(piece);
        firstDone = true;
      }
    }
    return out;
  }

  return {
    push(delta) {
      buf += delta;
      return drain(false);
    },
    flush() {
      const out = drain(true);
      const rest = toSpeakable(buf);
      buf = '';
      firstDone = false;
      if (spokenWeight(rest) > 0) out.push(rest);
      return out;
    },
  };
}
