/**
 * @module A realtime model's spoken answer presented as a voice's text stream (`TtsTextStream`), so
 * it plays through the same path as a bidirectional voice (`text-stream-segment.ts`: PCM to the
 * media worker, Opus, the pacer, `sentence_start` with the frame that holds its sentence): one
 * stretch of the answer's audio, over one or more responses of a turn (a function call's answer
 * continues it).
 *
 * Captions come from the model's transcript of its own audio, cut into sentences as the cascade
 * cuts a model's text (`llm/sentences.ts`). A sentence's mark goes in front of the audio that
 * arrives after its text is complete: the model writes a sentence's words before or while it
 * speaks them, so the mark lands at or near its start. A sentence whose words end with its
 * punctuation is marked at the next audio (the cutter waits for what follows a '.'), and the
 * rest at the end of the response (shown only if audio follows it).
 *
 * Memory: the segment reads this ahead of playback up to its own bound; what the model sends
 * beyond that waits here, bounded by `maxBufferedBytes`: `audio` refuses more and the caller cuts
 * the answer there.
 */
import { AsyncQueue } from '../../core/async-queue.ts';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { TextStreamingTts, TtsStreamEvent, TtsTextStream, TtsTextStreamOptions } from '../../audio/tts/tts.ts';
import { createSentenceCutter } from '../../llm/sentences.ts';

/** Answer audio waiting here at most, beyond the segment's read-ahead (about 44 s of 24 kHz PCM). */
export const MAX_BUFFERED_BYTES = 2 * 1024 * 1024;

/** Text that ends a sentence, closing quotes and brackets after it. */
const SENTENCE_END = /[.!?;。！？；…]["'”’」』）)\]】》]*\s*$/u;

export class ResponseAudio implements TtsTextStream {
  readonly #queue = new AsyncQueue<TtsStreamEvent>();
  readonly #cutter = createSentenceCutter();
  readonly #max: number;
  /** The transcript's last characters since the cutter was last flushed (only its end is looked at). */
  #tail = '';
  #buffered = 0;
  #accepted = 0;
  /** This stream as a voice, for the segment. */
  readonly tts: TextStreamingTts;

  constructor(opts: { provider: string; sampleRate: number; maxBufferedBytes?: number }) {
    this.#max = opts.maxBufferedBytes ?? MAX_BUFFERED_BYTES;
    const open = (o: TtsTextStreamOptions): TtsTextStream => {
      const stop = (): void => this.#queue.fail(new VoiceError(ErrorCode.Aborted, 'answer playback stopped'));
      if (o.signal.aborted) stop();
      else o.signal.addEventListener('abort', stop, { once: true });
      return this;
    };
    this.tts = {
      name: opts.provider,
      synthesis: 'stream',
      outputFormat: { container: 'pcm', sampleRate: opts.sampleRate },
      synthesize: () => {
        throw new VoiceError(ErrorCode.Internal, 'a realtime answer cannot synthesise text');
      },
      openTextStream: open,
      close: async () => {},
    };
  }

  /** Answer audio (16-bit PCM at the model's rate). False when the bound is reached: nothing more is taken. */
  audio(pcm: Buffer): boolean {
    if (this.#queue.closed) return false;
    if (this.#buffered + pcm.length > this.#max) return false;
    if (SENTENCE_END.test(this.#tail)) this.#marks(this.#cutter.flush());
    this.#buffered += pcm.length;
    this.#accepted += pcm.length;
    this.#queue.push({ type: 'audio', data: pcm });
    return true;
  }

  /** More of the model's transcript of what it says. */
  transcript(delta: string): void {
    if (this.#queue.closed || delta === '') return;
    this.#tail = (this.#tail + delta).slice(-16);
    this.#marks(this.#cutter.push(delta));
  }

  /** A response ended: the transcript's rest becomes a caption (more responses may follow). */
  endResponse(): void {
    if (this.#queue.closed) return;
    this.#marks(this.#cutter.flush());
  }

  /** No more audio in this stretch: the stream ends after what it holds. */
  end(): void {
    this.endResponse();
    this.#queue.close();
  }

  /** Milliseconds of audio taken so far (what will be played unless stopped). */
  acceptedMs(sampleRate: number): number {
    return (this.#accepted / 2 / sampleRate) * 1000;
  }

  #marks(pieces: string[]): void {
    this.#tail = '';
    for (const text of pieces) if (text.trim() !== '') this.#queue.push({ type: 'sentence', text });
  }

  push(): void {
    // The model speaks by itself: no text goes in.
  }

  finish(): void {
    // Its end is the answer's (`end`), not the segment's.
  }

  get events(): AsyncIterable<TtsStreamEvent> {
    const queue = this.#queue;
    return {
      [Symbol.asyncIterator]: () => ({
        next: async () => {
          const r = await queue.next();
          if (!r.done && r.value.type === 'audio') this.#buffered -= r.value.data.length;
          return r;
        },
      }),
    };
  }
}
