/**
 * @module Emotion cues at the start of a model reply. Prompts often ask the model to open with an
 * emoji or a `[happy]` tag; the device shows it as a face (`{"type":"llm","emotion":...}`) and the
 * TTS must not read it. The names are core/emotions.ts's; the emoji sent with each is the device
 * protocol's (protocol/messages.ts).
 */

import { EMOTIONS, type Emotion } from '../core/emotions.ts';

/** Common emoji → emotion (keyed by the base pictograph, without variation selectors). */
const EMOJI_TO_EMOTION: ReadonlyMap<string, Emotion> = new Map(
  (
    [
      ['neutral', '😶😐😑'],
      ['happy', '🙂😊😀😃😄😁☺🤗😇🥳'],
      ['laughing', '😆🤣'],
      ['funny', '😂😹'],
      ['sad', '😔😞😟🙁☹😢😥😓'],
      ['angry', '😠😡🤬😤'],
      ['crying', '😭😿'],
      ['loving', '😍🥰❤💕💖💗💓😻💞'],
      ['embarrassed', '😳😅🫣😬'],
      ['surprised', '😲😮😯🤩'],
      ['shocked', '😱😨🤯😧😦'],
      ['thinking', '🤔🧐'],
      ['winking', '😉'],
      ['cool', '😎🆒'],
      ['relaxed', '😌🧘☕'],
      ['delicious', '🤤😋'],
      ['kissy', '😘😗😙😚💋'],
      ['confident', '😏💪👍'],
      ['sleepy', '😴😪🥱💤'],
      ['silly', '😜🤪😝😛'],
      ['confused', '🙄😕🤨😵❓'],
    ] as Array<[Emotion, string]>
  ).flatMap(([emotion, chars]) => Array.from(chars, (ch) => [ch, emotion] as [string, Emotion])),
);

/** Tag words (English and Chinese) that name an emotion. */
const TAG_SYNONYMS: ReadonlyMap<string, Emotion> = new Map<string, Emotion>([
  ...EMOTIONS.map((e) => [e, e] as [string, Emotion]),
  ['calm', 'neutral'],
  ['joy', 'happy'],
  ['smile', 'happy'],
  ['glad', 'happy'],
  ['excited', 'happy'],
  ['laugh', 'laughing'],
  ['sadness', 'sad'],
  ['cry', 'crying'],
  ['anger', 'angry'],
  ['mad', 'angry'],
  ['love', 'loving'],
  ['shy', 'embarrassed'],
  ['surprise', 'surprised'],
  ['shock', 'shocked'],
  ['think', 'thinking'],
  ['wink', 'winking'],
  ['tired', 'sleepy'],
  ['confusion', 'confused'],
  ['playful', 'silly'],
  ['yummy', 'delicious'],
  ['kiss', 'kissy'],
  ['proud', 'confident'],
  ['平静', 'neutral'],
  ['中性', 'neutral'],
  ['开心', 'happy'],
  ['高兴', 'happy'],
  ['快乐', 'happy'],
  ['大笑', 'laughing'],
  ['搞笑', 'funny'],
  ['难过', 'sad'],
  ['伤心', 'sad'],
  ['生气', 'angry'],
  ['愤怒', 'angry'],
  ['哭', 'crying'],
  ['哭泣', 'crying'],
  ['喜爱', 'loving'],
  ['爱', 'loving'],
  ['尴尬', 'embarrassed'],
  ['害羞', 'embarrassed'],
  ['惊讶', 'surprised'],
  ['震惊', 'shocked'],
  ['思考', 'thinking'],
  ['眨眼', 'winking'],
  ['酷', 'cool'],
  ['放松', 'relaxed'],
  ['美味', 'delicious'],
  ['好吃', 'delicious'],
  ['亲亲', 'kissy'],
  ['自信', 'confident'],
  ['困', 'sleepy'],
  ['困了', 'sleepy'],
  ['调皮', 'silly'],
  ['困惑', 'confused'],
]);

/** Emotion for an emoji (any variation selectors or modifiers are ignored), if it is a known one. */
export function emotionForEmoji(emoji: string): Emotion | undefined {
  const base = Array.from(emoji)[0];
  return base === undefined ? undefined : EMOJI_TO_EMOTION.get(base);
}

/** Emotion for a tag word such as `happy`, `Joy` or `开心`. */
export function emotionForTag(tag: string): Emotion | undefined {
  return TAG_SYNONYMS.get(tag.trim().toLowerCase());
}

const PICTO = /^\p{Extended_Pictographic}/u;
/** One emoji cluster: a pictograph with its selectors, modifiers and ZWJ-joined parts. */
const CLUSTER =
  /^\p{Extended_Pictographic}(?:\u{FE0F}|\u{20E3}|[\u{1F3FB}-\u{1F3FF}])*(?:\u{200D}\p{Extended_Pictographic}(?:\u{FE0F}|[\u{1F3FB}-\u{1F3FF}])*)*/u;
/** A tag longer than this is not a tag: stop waiting for its closing bracket. */
const MAX_TAG = 24;

export interface EmotionExtractor {
  /** Returns the text to pass on (the leading cue removed once recognised). */
  push(delta: string): string;
  /** Returns text held back while undecided. */
  flush(): string;
}

/**
 * Watches the start of a reply for one leading emoji or `[tag]` / `【tag】`. A recognised cue calls
 * `onEmotion` and is removed; an unknown leading emoji is removed without a callback (TTS cannot
 * read it); anything else passes through unchanged. Text is held back only while the start is
 * undecided (a few characters at most).
 */
export function createEmotionExtractor(onEmotion: (emotion: Emotion) => void): EmotionExtractor {
  let pending = '';
  let decided = false;
  // After a removed cue, whitespace that follows it (possibly in later deltas) is dropped too.
  let trimming = false;
  const afterCue = (rest: string): string => {
    const out = rest.trimStart();
    trimming = out === '';
    return out;
  };
  return {
    push(delta) {
      if (decided) return trimming ? afterCue(delta) : delta;
      pending += delta;
      const lead = pending.length - pending.trimStart().length;
      const s = pending.slice(lead);
      if (s === '') return '';
      const open = s[0];
      if (open === '[' || open === '【') {
        const close = s.indexOf(open === '[' ? ']' : '】');
        if (close < 0) {
          if (s.length <= MAX_TAG) return '';
          decided = true;
          return pending;
        }
        decided = true;
        const emotion = emotionForTag(s.slice(1, close));
        if (!emotion) return pending;
        onEmotion(emotion);
        return afterCue(s.slice(close + 1));
      }
      if (PICTO.test(s)) {
        const m = CLUSTER.exec(s);
        const cluster = m?.[0] ?? '';
        decided = true;
        const emotion = emotionForEmoji(cluster);
        if (emotion) onEmotion(emotion);
        return afterCue(s.slice(cluster.length));
      }
      decided = true;
      return pending;
    },
    flush() {
      const out = decided ? '' : pending;
      pending = '';
      decided = true;
      return out;
    },
  };
}
