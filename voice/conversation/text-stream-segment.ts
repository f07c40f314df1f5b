/**
 * @module One text stream of a streaming voice (`TtsTextStream`), from the text pushed to the
 * device's frames: the vendor's audio → Opus in the session's media worker (`media.encode`, one
 * encoder stream, so sentences join without a padded frame between them; PCM goes there as bytes
 * and is resampled there, other containers are decoded by `ttsToPcm` first) → the pacer, with each sentence's `sentence_start` sent with the frame that
 * holds its first sample.
 *
 * Captions: the vendor's own sentence marks when it sends them (a mark precedes its sentence's
 * audio, so its place in the audio is exact to the frame). A vendor that sends none gets our cut
 * of the text pushed (`llm/sentences.ts`): each sentence's caption goes with the first audio that
 * arrives after that sentence was pushed. That is exact when the vendor had sent all the audio of
 * the text before it by then (a model no faster than the voice); otherwise it is early by the
 * audio of earlier text still to come, and with a model much faster than the voice several
 * captions come close together near the start (the device shows the last).
 *
 * Memory: the vendor's audio is read ahead of playback up to `maxAheadBytes`. At that point the
 * stream is not read further, and the text still to push is held here (text is small; the vendor
 * makes audio only of the text it has). Reading resumes once playback has used half of the
 * read-ahead; the held text goes to the vendor a sentence at a time, each when playback has used
 * all that was read (the vendor has sent all it made) and the last one's audio has begun to
 * arrive; the device's own lead (`audio.sendAheadMs`) covers the vendor's latency then. A vendor
 * that synthesises faster than real time thus costs about the bound plus a sentence of audio,
 * here and in the provider, however long the answer.
 */
import { linkedScope, type Scope } from '../../core/abort.ts';
import { AsyncQueue } from '../../core/async-queue.ts';
import { ErrorCode, isAbortError, toVoiceError, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import type { SessionMedia } from '../../audio/media/media.ts';
import { ttsToPcm } from '../../audio/tts/to-pcm.ts';
import type { TextStreamingTts, TtsTextStream } from '../../audio/tts/tts.ts';
import { createSentenceCutter } from '../../llm/sentences.ts';
import type { AudioOut } from './audio-out.ts';

/** Text that a voice speaks: a letter or a digit. */
const WORDS = /[\p{L}\p{N}]/u;

/** Captions waiting for their frame at most: a vendor sending marks without audio keeps the last ones. */
const MAX_PLACED = 16;

/** The vendor's audio read ahead of playback at most (about 11 s of 24 kHz PCM). */
export const MAX_AHEAD_BYTES = 512 * 1024;

export interface TextStreamSegmentOptions {
  tts: TextStreamingTts;
  out: AudioOut;
  media: Pick<SessionMedia, 'encode'>;
  /** Downlink PCM rate and frame duration (the encoder's frames). */
  sampleRate: number;
  frameMs: number;
  /** The turn's signal: its abort cancels the vendor's session. */
  signal: AbortSignal;
  log: Logger;
  /** Playback starts after this (the previous segment's). */
  after: Promise<void>;
  maxAheadBytes?: number;
  /** The first audio bytes from the vendor. */
  onAudio?: () => void;
  /** A sentence's caption went out with its first frame. */
  onCaption?: (text: string) => void;
  /** The stream failed (not an abort): the error, logged. */
  onError?: (err: VoiceError) => void;
}

/** The provider's stream; one that throws at opening fails like a stream whose events throw. */
function openStream(tts: TextStreamingTts, signal: AbortSignal, log: Logger): TtsTextStream {
  try {
    return tts.openTextStream({ signal, log });
  } catch (err) {
    return {
      push: () => {},
      finish: () => {},
      events: {
        [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(err) }),
      },
    };
  }
}

type Item = { kind: 'caption'; text: string } | { kind: 'audio'; data: Buffer } | { kind: 'error'; error: VoiceError };

export class TextStreamSegment {
  readonly #o: TextStreamSegmentOptions;
  readonly #max: number;
  /** This stream's own cancellation, under the turn's: playback that ends early cancels the vendor. */
  readonly #scope: Scope;
  readonly #stream: TtsTextStream;
  /** The vendor's events read ahead of playback, in order. */
  readonly #items = new AsyncQueue<Item>();
  #ahead = 0;
  /** The read-ahead reached the bound and has not yet fallen to half of it: reading and text wait. */
  #full = false;
  #roomWaiter: (() => void) | undefined;
  /** Text waiting while the vendor is too far ahead. */
  #held = '';
  /** A piece of held text was sent and its audio has not begun to arrive. */
  #owed = false;
  #finishRequested = false;
  #finished = false;
  /** Our cut of the text pushed, for a vendor that sends no sentence marks. */
  readonly #cutter = createSentenceCutter();
  #ownCaptions: string[] = [];
  #marks: 'unknown' | 'vendor' | 'own' = 'unknown';
  /** Captions placed in the PCM: `at` is the first sample (at the downlink rate) of their sentence. */
  readonly #placed: Array<{ at: number; text: string }> = [];
  #samplesOut = 0;
  #pumpDone = false;
  #error: VoiceError | undefined;
  /** Resolves when this segment's audio has all been sent (or it failed or was stopped); never rejects. */
  readonly done: Promise<void>;

  constructor(opts: TextStreamSegmentOptions) {
    this.#o = opts;
    this.#max = opts.maxAheadBytes ?? MAX_AHEAD_BYTES;
    this.#scope = linkedScope(opts.signal);
    this.#scope.signal.addEventListener('abort', () => this.#wake(), { once: true });
    this.#stream = openStream(opts.tts, this.#scope.signal, opts.log);
    const pump = this.#pump();
    this.done = this.#play(pump);
  }

  /** More text of the answer (already speakable). */
  push(text: string): void {
    if (this.#finishRequested || this.#scope.signal.aborted || !text) return;
    if (this.#held !== '' || this.#full) {
      this.#held += text;
      return;
    }
    this.#send(text);
  }

  /** No more text: the vendor speaks the rest (held text first). */
  finish(): void {
    if (this.#finishRequested) return;
    this.#finishRequested = true;
    if (this.#held === '') this.#finishNow();
  }

  get error(): VoiceError | undefined {
    return this.#error;
  }

  #send(text: string): void {
    this.#stream.push(text);
    const cut = this.#cutter.push(text);
    if (this.#marks !== 'vendor') this.#ownCaptions.push(...cut);
  }

  #finishNow(): void {
    if (this.#finished) return;
    this.#finished = true;
    const cut = this.#cutter.flush();
    if (this.#marks !== 'vendor') this.#ownCaptions.push(...cut);
    this.#stream.finish();
  }

  #wake(): void {
    const w = this.#roomWaiter;
    this.#roomWaiter = undefined;
    w?.();
  }

  /** Playback took `bytes` of the read-ahead: below half of the bound, reading resumes. */
  #drained(bytes: number): void {
    this.#ahead -= bytes;
    if (this.#full && this.#ahead >= this.#max / 2) return;
    this.#full = false;
    this.#wake();
  }

  /**
   * Sends the next sentence of the held text that has words (the rest of it, when no sentence end
   * follows words): a piece of punctuation alone may make no audio, and the next piece waits for
   * this one's audio.
   */
  #release(): void {
    if (this.#held === '' || this.#scope.signal.aborted) return;
    const ends = /[.!?;。！？；\n]+\s*/gu;
    let cut = this.#held.length;
    for (let m = ends.exec(this.#held); m; m = ends.exec(this.#held)) {
      const end = m.index + m[0].length;
      if (WORDS.test(this.#held.slice(0, end))) {
        cut = end;
        break;
      }
    }
    const piece = this.#held.slice(0, cut);
    this.#held = this.#held.slice(cut);
    this.#owed = WORDS.test(piece);
    this.#send(piece);
    if (this.#held === '' && this.#finishRequested) this.#finishNow();
  }

  #fail(err: unknown): void {
    if (this.#error) return;
    const e = toVoiceError(err);
    // Bytes the decoder cannot read are the voice service's answer, not our fault.
    this.#error =
      e.code === ErrorCode.BadInput
        ? new VoiceError(ErrorCode.ProviderFailed, `${this.#o.tts.name} tts sent audio that cannot be decoded`, {
            cause: e,
          })
        : e;
    this.#o.log.error(
      { tts: this.#o.tts.name, code: this.#error.code, err: this.#error.message },
      'speech stream failed',
    );
    this.#o.onError?.(this.#error);
  }

  /** Adds to the read-ahead; `size` counts towards its bound (captions too: marks without audio are bounded). */
  #queue(item: Item, size: number): void {
    this.#items.push(item);
    this.#ahead += size;
    if (this.#ahead >= this.#max) this.#full = true;
  }

  /** Waits while the read-ahead is full (until playback has used half of it, or an abort). */
  async #room(): Promise<void> {
    while (this.#full && !this.#scope.signal.aborted)
      await new Promise<void>((resolve) => {
        this.#roomWaiter = resolve;
      });
  }

  /** Reads the vendor's events into the read-ahead queue, up to the bound. */
  async #pump(): Promise<void> {
    const signal = this.#scope.signal;
    try {
      for await (const ev of this.#stream.events) {
        if (ev.type === 'sentence') {
          if (this.#marks !== 'vendor') {
            this.#marks = 'vendor';
            this.#ownCaptions = [];
          }
          const text = ev.text.trim();
          if (text) {
            this.#queue({ kind: 'caption', text }, text.length);
            await this.#room();
            if (signal.aborted) return;
          }
          continue;
        }
        if (ev.data.length === 0) continue;
        this.#owed = false;
        this.#o.onAudio?.();
        // A vendor that marks its sentences marks the first before its audio.
        if (this.#marks === 'unknown') this.#marks = 'own';
        if (this.#marks === 'own')
          for (const text of this.#ownCaptions.splice(0)) this.#queue({ kind: 'caption', text }, text.length);
        this.#queue({ kind: 'audio', data: ev.data }, ev.data.length);
        await this.#room();
        if (signal.aborted) return;
      }
    } catch (err) {
      if (isAbortError(err) || signal.aborted) return;
      this.#fail(err);
      // After the audio that did arrive: it is still played.
      this.#items.push({ kind: 'error', error: this.#error as VoiceError });
    } finally {
      this.#pumpDone = true;
      this.#items.close();
    }
  }

  async *#bytes(): AsyncGenerator<Buffer> {
    for (;;) {
      // Playback has played all that was read, and reading is not paused: the vendor has sent
      // all it made, so it gets the next held text. Unless it owes audio for the last piece (its
      // provider fails the stream if that never comes, past its timeoutMs).
      if (this.#items.size === 0 && !this.#owed) this.#release();
      const next = await this.#items.next();
      if (next.done) return;
      const item = next.value;
      if (item.kind === 'caption') {
        this.#placed.push({ at: this.#samplesOut, text: item.text });
        // Marks with no audio between them would all go out at once: only the last few matter.
        if (this.#placed.length > MAX_PLACED) this.#placed.shift();
        this.#drained(item.text.length);
      } else if (item.kind === 'error') throw item.error;
      else {
        this.#drained(item.data.length);
        yield item.data;
      }
    }
  }

  /**
   * PCM from the vendor (both bidirectional providers' default) goes to the media worker as bytes,
   * resampled there when its rate is not the downlink's: the main thread counts samples, at the
   * downlink rate, to place the captions. Other containers are decoded by `ttsToPcm` first.
   */
  #encode(): AsyncIterable<Buffer> {
    const { media, tts, sampleRate } = this.#o;
    const format = tts.outputFormat;
    if (format.container !== 'pcm') return media.encode(this.#pcm(), this.#scope.signal);
    return media.encode(this.#pcmBytes(sampleRate / format.sampleRate), this.#scope.signal, {
      container: 'pcm',
      sampleRate: format.sampleRate,
    });
  }

  /** The vendor's PCM bytes as they are, counted as samples at the downlink rate (`ratio`: downlink / vendor rate). */
  async *#pcmBytes(ratio: number): AsyncGenerator<Buffer> {
    let bytes = 0;
    for await (const data of this.#bytes()) {
      bytes += data.length;
      this.#samplesOut = Math.floor((bytes / 2) * ratio);
      yield data;
    }
  }

  async *#pcm(): AsyncGenerator<Int16Array> {
    const { tts, sampleRate, log } = this.#o;
    for await (const pcm of ttsToPcm(this.#bytes(), tts.outputFormat, {
      sampleRate,
      signal: this.#scope.signal,
      log,
    })) {
      this.#samplesOut += pcm.length;
      yield pcm;
    }
  }

  /** Opus packets, each with the captions of the sentences whose first sample it holds. */
  async *#frames(): AsyncGenerator<{ packet: Buffer; captions: string[] }> {
    const { sampleRate, frameMs } = this.#o;
    const frame = Math.round((sampleRate * frameMs) / 1000);
    let index = 0;
    for await (const packet of this.#encode()) {
      const end = (index + 1) * frame;
      const captions: string[] = [];
      while (this.#placed.length > 0 && (this.#placed[0] as { at: number }).at < end)
        captions.push((this.#placed.shift() as { text: string }).text);
      index++;
      yield { packet, captions };
    }
  }

  /**
   * Plays the one encoded stream as one `playPackets` per sentence: the pacer starts a sentence
   * only once every frame before it was sent, so its `sentence_start` goes out right before its
   * first frame, not with the frames the pacer holds ready ahead of sending.
   */
  async #playSentences(): Promise<void> {
    const { out, onCaption } = this.#o;
    const frames = this.#frames();
    let next = await frames.next();
    try {
      while (!next.done) {
        const { packet, captions } = next.value;
        let sentenceEnded = false;
        const sentence = (async function* (): AsyncGenerator<Buffer> {
          // Captions of sentences with no frame of their own go out together, in order.
          for (const text of captions.slice(0, -1)) out.caption(text);
          for (const text of captions) onCaption?.(text);
          yield packet;
          for (;;) {
            next = await frames.next();
            if (next.done || next.value.captions.length > 0) {
              sentenceEnded = true;
              return;
            }
            yield next.value.packet;
          }
        })();
        await out.playPackets(captions.at(-1) ?? null, sentence);
        // Stopped before its end (barge-in, a stopped device): nothing more to play.
        if (!sentenceEnded) return;
      }
    } finally {
      if (next.done !== true) void frames.return(undefined).catch(() => {});
    }
  }

  async #play(pump: Promise<void>): Promise<void> {
    try {
      await this.#o.after;
      if (!this.#scope.signal.aborted) await this.#playSentences();
    } catch (err) {
      if (!isAbortError(err) && !this.#scope.signal.aborted && err !== this.#error) this.#fail(err);
    } finally {
      // Playback is over; a vendor still sending (stopped device, failed playback) is cancelled.
      if (!this.#pumpDone) this.#scope.abort(new VoiceError(ErrorCode.Aborted, 'speech playback ended'));
      await pump;
      this.#scope.dispose();
    }
  }
}
