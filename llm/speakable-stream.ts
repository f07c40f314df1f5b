/**
 * @module The model's text for a voice that takes it as it is written (a streaming TTS): what
 * `toSpeakable` removes (markdown markup, emoji, HTML tags), removed from fragments, so the vendor
 * does not read out "**" or "#". Unlike the sentence cutter it waits for no sentence end: text is
 * held back only to the end of the current word (a space, a line break, a CJK character), and
 * while a markdown link or inline code is open, because the stripper needs both halves of those.
 */
import { markupBalanced } from './sentences.ts';
import { toSpeakable } from './speakable.ts';

/** Characters after which a fragment may end: each is a word of its own. */
const WIDE = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\u3000-\u303f\uff00-\uffef]/u;
const SPACE = /\s/;
/**
 * Text held back at most while a link or inline code stays open: a model that opens "[" and never
 * closes it must not silence the rest of the answer (nor make every push rescan a growing buffer).
 */
const MAX_HELD_CHARS = 400;

export interface SpeakableStream {
  /** Adds the model's text; returns what can be sent now (possibly ''). */
  push(delta: string): string;
  /** The end of the text: returns whatever was held back. The stream can then be reused. */
  flush(): string;
}

/** `raw` cleaned, keeping the word break (and the pause of a line break) at its end. */
function clean(raw: string): string {
  let s = toSpeakable(raw);
  if (s === '') return '';
  const last = s.at(-1) ?? '';
  // A line that ends without punctuation still ends a thought (as `toSpeakable` does inside a text).
  if (/\n\s*$/.test(raw) && /[\p{L}\p{N}]/u.test(last)) s += WIDE.test(last) ? '，' : ',';
  if (SPACE.test(raw.at(-1) ?? '') && !WIDE.test(s.at(-1) ?? '')) s += ' ';
  return s;
}

export function createSpeakableStream(): SpeakableStream {
  let buf = '';

  /** The end of the longest prefix that ends a word and closes its markup, or 0. */
  function cutAt(): number {
    for (let i = buf.length; i > 0; i--) {
      const c = buf[i - 1] ?? '';
      if ((SPACE.test(c) || WIDE.test(c)) && markupBalanced(buf.slice(0, i))) return i;
    }
    return 0;
  }

  return {
    push(delta) {
      buf += delta;
      let end = cutAt();
      if (end === 0 && buf.length > MAX_HELD_CHARS) end = buf.length;
      if (end === 0) return '';
      const piece = buf.slice(0, end);
      buf = buf.slice(end);
      return clean(piece);
    },
    flush() {
      const rest = buf;
      buf = '';
      return toSpeakable(rest);
    },
  };
}
