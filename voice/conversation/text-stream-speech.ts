/**
 * @module The answer for a voice that takes text in pieces (`canStreamText`): the model's text
 * goes to the vendor as it is written (cleaned of markup, `llm/speakable-stream.ts`), with no wait
 * for a sentence end. One text stream per stretch of speech: a flush (a tool's media is about to
 * play) finishes the stream and waits until its audio was sent; text after it opens a new one.
 * Each stream's audio and captions: `text-stream-segment.ts`.
 *
 * A stream that fails (the vendor closed, sent garbage, stalled, answered an error) ends the
 * answer's speech: its audio that did arrive is played, the rest of the answer is not sent
 * anywhere, and `failure` tells the turn to apologise (once, in the embedded voice).
 */
import type { VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import type { SessionMedia } from '../../audio/media/media.ts';
import type { TextStreamingTts } from '../../audio/tts/tts.ts';
import { createSpeakableStream } from '../../llm/speakable-stream.ts';
import type { AudioOut } from './audio-out.ts';
import type { Speech } from './speech.ts';
import { TextStreamSegment } from './text-stream-segment.ts';

export interface TextStreamSpeechOptions {
  tts: TextStreamingTts;
  out: AudioOut;
  media: Pick<SessionMedia, 'encode'>;
  /** Downlink PCM rate and frame duration. */
  sampleRate: number;
  frameMs: number;
  /** The turn's signal: its abort cancels the open stream. */
  signal: AbortSignal;
  log: Logger;
  /** The answer's first text sent to the vendor. */
  onFirstText?: () => void;
  /** The answer's first audio bytes from the vendor. */
  onFirstAudio?: () => void;
  /** Vendor audio read ahead of playback at most (default `MAX_AHEAD_BYTES`). */
  maxAheadBytes?: number;
}

export class TextStreamSpeech implements Speech {
  readonly #o: TextStreamSpeechOptions;
  readonly #clean = createSpeakableStream();
  #segment: TextStreamSegment | undefined;
  /** Settles when every segment opened so far has been played. */
  #played: Promise<void> = Promise.resolve();
  #firstText = true;
  #firstAudio = true;
  #ended = false;
  readonly #errors: VoiceError[] = [];
  readonly #spoken: string[] = [];

  constructor(opts: TextStreamSpeechOptions) {
    this.#o = opts;
  }

  write(delta: string): void {
    if (!this.#open()) return;
    this.#send(this.#clean.push(delta));
  }

  say(text: string): void {
    if (!this.#open()) return;
    // On its own line: a pause after what was written, and words of its own.
    this.#send(this.#clean.push(`\n${text}\n`));
  }

  async flush(): Promise<void> {
    if (this.#open()) this.#send(this.#clean.flush());
    const segment = this.#segment;
    this.#segment = undefined;
    segment?.finish();
    await this.#played;
  }

  async end(): Promise<void> {
    await this.flush();
    this.#ended = true;
  }

  get errors(): readonly VoiceError[] {
    return this.#errors;
  }

  get spoken(): readonly string[] {
    return this.#spoken;
  }

  get failure(): VoiceError | undefined {
    return this.#errors[0];
  }

  /** Text is still taken: not ended, not aborted, and no stream has failed (the turn apologises). */
  #open(): boolean {
    return !this.#ended && !this.#o.signal.aborted && this.#errors.length === 0;
  }

  #send(text: string): void {
    if (text === '') return;
    if (!this.#segment) {
      // A stream starts with words, not with the blank between two answers' parts.
      if (text.trim() === '') return;
      this.#segment = this.#openSegment();
    }
    if (this.#firstText && text.trim() !== '') {
      this.#firstText = false;
      this.#o.onFirstText?.();
    }
    this.#segment.push(text);
  }

  #openSegment(): TextStreamSegment {
    const o = this.#o;
    const segment = new TextStreamSegment({
      tts: o.tts,
      out: o.out,
      media: o.media,
      sampleRate: o.sampleRate,
      frameMs: o.frameMs,
      signal: o.signal,
      log: o.log,
      after: this.#played,
      ...(o.maxAheadBytes !== undefined ? { maxAheadBytes: o.maxAheadBytes } : {}),
      onAudio: () => {
        if (!this.#firstAudio) return;
        this.#firstAudio = false;
        o.onFirstAudio?.();
      },
      onCaption: (text) => this.#spoken.push(text),
      onError: (err) => {
        this.#errors.push(err);
        // Nothing more of this answer goes to a vendor that failed it.
        if (this.#segment === segment) this.#segment = undefined;
        segment.finish();
      },
    });
    this.#played = segment.done;
    return segment;
  }
}
