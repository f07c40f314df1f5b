/**
 * @module Turns model text into what a TTS engine should read: markdown markup, emoji and
 * decorations removed, line breaks turned into pauses. Also the "how long does this sound" weight
 * the sentence cutter uses.
 */

// Emoji and their glue: pictographs, variation selector 16, zero-width joiner, keycap, skin tones, flags.
const EMOJI = /\p{Extended_Pictographic}|\u{FE0F}|\u{200D}|\u{20E3}|[\u{1F3FB}-\u{1F3FF}]|[\u{1F1E6}-\u{1F1FF}]/gu;
const WIDE = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u;
const LETTER = /[\p{L}\p{N}]/u;

/** Removes emoji (and their joiners/modifiers) from text. */
export function stripEmoji(text: string): string {
  return text.replace(EMOJI, '');
}

/** Strips markdown markup, HTML tags and emoji; keeps the words. Line breaks become pauses. */
export function toSpeakable(text: string): string {
  let s = text
    .replace(/^\s*```.*$/gm, '') // code fence lines
    .replace(/!\[([^\]]*)\]\([^)]*\)/g, '$1') // images → alt text
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1') // links → link text
    .replace(/<\/?[a-zA-Z][^>]*>/g, ' ') // html tags (<br>, <b>)
    .replace(/^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$/gm, '') // table separator rows
    .replace(/^\s{0,3}([-*_])(\s*\1){2,}\s*$/gm, '') // horizontal rules
    .replace(/^\s{0,3}#{1,6}\s+/gm, '') // headings
    .replace(/^\s{0,3}>\s?/gm, '') // block quotes
    .replace(/^\s*[-*+•]\s+/gm, '') // bullets
    .replace(/(\*\*|__|~~)/g, '') // bold, strike
    .replace(/\*/g, '') // italics and stray asterisks
    .replace(/`/g, '') // inline code
    .replace(/[ \t]*\|[ \t]*/g, ' '); // table cells
  s = stripEmoji(s);
  // A line that ends without punctuation still ends a thought: give the TTS a pause there.
  s = s.replace(/([\p{L}\p{N}])[ \t]*\n+\s*(?=\S)/gu, (_m, ch: string) => (WIDE.test(ch) ? `${ch}，` : `${ch}, `));
  // Removed emoji can leave "news !": no space before punctuation.
  return s
    .replace(/\s+/g, ' ')
    .replace(/\s+([,.!?;:，。！？；：、])/g, '$1')
    .trim();
}

/**
 * How long a text sounds, in "Latin letters": each letter or digit counts 1, each CJK character 2
 * (one syllable), punctuation and spaces 0.
 */
export function spokenWeight(text: string): number {
  let w = 0;
  for (const ch of text) {
    if (WIDE.test(ch)) w += 2;
    else if (LETTER.test(ch)) w += 1;
  }
  return w;
}
