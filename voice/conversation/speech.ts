/**
 * @module How a turn speaks the model's answer, whatever its voice: the text goes in as the model
 * writes it, and comes out as paced audio with its sentence events. Two ways behind one surface:
 * a voice that synthesises whole texts gets the answer cut into sentences (`SentenceSpeech`); a
 * voice that takes text in pieces gets it as it is written (`TextStreamSpeech`). The turn picks
 * by the voice's capability (`canStreamText`), and the answer's length is bounded for both here.
 */
import type { VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';

export interface Speech {
  /** The model's text, in the fragments it is written in. */
  write(delta: string): void;
  /** A whole text to say after what was written (a dispatcher's note about media that failed). */
  say(text: string): void;
  /**
   * Speaks everything written so far; resolves once it has been sent to the device (so that media
   * plays after it). More text may follow.
   */
  flush(): Promise<void>;
  /** No more text: resolves when everything has been sent. */
  end(): Promise<void>;
  /** Synthesis or playback failures, in order (logged where they happened). */
  readonly errors: readonly VoiceError[];
  /** The sentences whose audio was played (their `sentence_start` went out). */
  readonly spoken: readonly string[];
  /**
   * The failure the user must hear an apology for (the answer could not be spoken as written), or
   * undefined: a per-sentence voice that lost one sentence of several goes on with the next.
   */
  readonly failure: VoiceError | undefined;
}

/**
 * `speech` taking at most `maxChars` characters of one answer (model text and notes together): a
 * model that writes on and on must not cost unbounded synthesis at a paid voice, nor hold the
 * device for minutes. Past it the rest is not spoken, and a warning says so once.
 */
export function boundedSpeech(speech: Speech, maxChars: number, log: Logger): Speech {
  let left = maxChars;
  let warned = false;
  const take = (text: string): string => {
    if (text.length <= left) {
      left -= text.length;
      return text;
    }
    let kept = text.slice(0, left);
    // Never half of a surrogate pair.
    const last = kept.charCodeAt(kept.length - 1);
    if (last >= 0xd800 && last <= 0xdbff) kept = kept.slice(0, -1);
    left = 0;
    if (!warned) {
      warned = true;
      log.warn({ maxChars }, 'answer too long to speak; the rest is not spoken (conversation.maxAnswerChars)');
    }
    return kept;
  };
  return {
    write: (delta) => {
      const t = take(delta);
      if (t) speech.write(t);
    },
    say: (text) => {
      const t = take(text);
      if (t) speech.say(t);
    },
    flush: () => speech.flush(),
    end: () => speech.end(),
    get errors() {
      return speech.errors;
    },
    get spoken() {
      return speech.spoken;
    },
    get failure() {
      return speech.failure;
    },
  };
}
