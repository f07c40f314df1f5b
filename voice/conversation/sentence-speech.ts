/**
 * @module The answer for a voice that synthesises whole texts: the model's text cut into sentences
 * (the first at a comma, `llm/sentences.ts`) and each spoken by the speech queue while the next
 * is synthesised.
 */
import type { VoiceError } from '../../core/errors.ts';
import { createSentenceCutter } from '../../llm/sentences.ts';
import type { AudioOut } from './audio-out.ts';
import type { Speech } from './speech.ts';
import type { SpeechQueue } from './speech-queue.ts';

export class SentenceSpeech implements Speech {
  readonly #queue: SpeechQueue;
  readonly #out: AudioOut;
  readonly #cutter = createSentenceCutter();
  readonly #onFirstText: (() => void) | undefined;
  #first = true;

  /** `onFirstText`: told when the answer's first sentence goes to the voice (the turn times it). */
  constructor(queue: SpeechQueue, out: AudioOut, onFirstText?: () => void) {
    this.#queue = queue;
    this.#out = out;
    this.#onFirstText = onFirstText;
  }

  #say(sentence: string): void {
    // The queue drops blank text (e.g. an apology configured as ""): that is not a first sentence.
    if (this.#first && sentence.trim()) {
      this.#first = false;
      this.#onFirstText?.();
    }
    this.#queue.push(sentence);
  }

  #flushCutter(): void {
    for (const s of this.#cutter.flush()) this.#say(s);
  }

  write(delta: string): void {
    for (const s of this.#cutter.push(delta)) this.#say(s);
  }

  say(text: string): void {
    this.#flushCutter();
    this.#say(text);
  }

  async flush(): Promise<void> {
    this.#flushCutter();
    await this.#queue.idle();
  }

  async end(): Promise<void> {
    this.#flushCutter();
    await this.#queue.end();
  }

  get errors(): readonly VoiceError[] {
    return this.#queue.errors;
  }

  get spoken(): readonly string[] {
    return this.#queue.spoken;
  }

  /** Only a voice that spoke nothing at all failed the answer: a lost sentence of several is skipped. */
  get failure(): VoiceError | undefined {
    const q = this.#queue;
    return q.errors.length > 0 && q.spoken.length === 0 && this.#out.framesSent === 0 ? q.errors[0] : undefined;
  }
}
