/**
 * @module Speaks sentences in order while the model is still writing: sentence N+1 is synthesized
 * while sentence N plays, so the answer has no gaps between sentences and the first sentence starts
 * as soon as it is cut. One synthesis worker and one player per turn, both stopped by the turn signal.
 */
import { AsyncQueue } from '../../core/async-queue.ts';
import { isAbortError, toVoiceError, type VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import { createSentenceCutter } from '../../llm/sentences.ts';
import type { AudioOut } from './audio-out.ts';

/** Sentences synthesized ahead of the one playing: enough for gapless speech, bounded memory. */
const LOOKAHEAD = 2;
/**
 * Longest text one `push` speaks (about a minute). Model text arrives already cut into sentences;
 * this bounds the rest (a title from an MCP server, a configured phrase), which a media worker
 * would otherwise synthesise, and hold as PCM, in one piece.
 */
const MAX_PUSH_CHARS = 1000;
/** Pieces of a longer text are cut to this (the sentence cutter's default for model text). */
const PIECE_CHARS = 160;

/** Turns one sentence into Opus packets at the downlink rate; `urgent` for the turn's first one. */
export type Synthesize = (text: string, signal: AbortSignal, urgent: boolean) => AsyncIterable<Buffer>;

interface Item {
  text: string;
  packets: AsyncQueue<Buffer>;
  /** Its synthesis has begun (it counts as ahead until the player takes it). */
  synthStarted?: boolean;
  /** The player has taken it. */
  taken?: boolean;
  /** Set when synthesis failed (the error is already recorded). */
  failed?: boolean;
}

export class SpeechQueue {
  readonly #out: AudioOut;
  readonly #synth: Synthesize;
  readonly #signal: AbortSignal;
  readonly #log: Logger;
  readonly #toSynth = new AsyncQueue<Item>();
  readonly #toPlay = new AsyncQueue<Item>();
  readonly #done: Promise<void>;
  #errors: VoiceError[] = [];
  #spoken: string[] = [];
  /** Sentences whose synthesis was started so far. */
  #synthStarted = 0;
  /** Sentences whose synthesis started and whose playback has not (never negative). */
  #ahead = 0;
  #roomWaiters: Array<() => void> = [];
  /** Sentences pushed and not yet finished playing. */
  #pending = 0;
  #idleWaiters: Array<() => void> = [];

  constructor(out: AudioOut, synth: Synthesize, signal: AbortSignal, log: Logger) {
    this.#out = out;
    this.#synth = synth;
    this.#signal = signal;
    this.#log = log;
    const worker = this.#synthLoop();
    const player = this.#playLoop();
    this.#done = Promise.all([worker, player]).then(() => undefined);
    signal.addEventListener(
      'abort',
      () => {
        for (const w of this.#roomWaiters.splice(0)) w();
        this.#toSynth.close();
        this.#toPlay.close();
      },
      { once: true },
    );
  }

  /** Queues a sentence; a long text is cut into sentences (and over MAX_PUSH_CHARS, shortened). */
  push(text: string): void {
    let t = text.trim();
    if (!t || this.#signal.aborted) return;
    if (t.length > MAX_PUSH_CHARS) {
      this.#log.warn({ chars: t.length, kept: MAX_PUSH_CHARS }, 'text to speak is too long; only its start is spoken');
      t = t.slice(0, MAX_PUSH_CHARS);
    }
    if (t.length <= PIECE_CHARS) {
      this.#queue(t);
      return;
    }
    // Cut like model text, but with no early cut at a comma: only length forces a cut.
    const cutter = createSentenceCutter({ maxChars: PIECE_CHARS, firstCutMinChars: Number.MAX_SAFE_INTEGER });
    for (const piece of [...cutter.push(t), ...cutter.flush()]) this.#queue(piece);
  }

  #queue(text: string): void {
    const item: Item = { text, packets: new AsyncQueue<Buffer>() };
    this.#pending++;
    this.#toSynth.push(item);
    this.#toPlay.push(item);
  }

  /** No more sentences; resolves when everything queued has been sent to the device. */
  async end(): Promise<void> {
    this.#toSynth.close();
    this.#toPlay.close();
    await this.#done;
  }

  /** Resolves once every sentence pushed so far has been sent (the queue stays open). */
  idle(): Promise<void> {
    if (this.#pending === 0 || this.#signal.aborted) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  #settled(): void {
    this.#pending--;
    if (this.#pending <= 0) for (const w of this.#idleWaiters.splice(0)) w();
  }

  /** Synthesis or playback failures (the turn decides whether to apologise). */
  get errors(): readonly VoiceError[] {
    return this.#errors;
  }

  /** The sentences that were actually played. */
  get spoken(): readonly string[] {
    return this.#spoken;
  }

  /** Waits until fewer than LOOKAHEAD sentences are synthesized (or synthesizing) and not yet taken by the player. */
  async #room(): Promise<void> {
    while (this.#ahead >= LOOKAHEAD && !this.#signal.aborted) {
      await new Promise<void>((resolve) => this.#roomWaiters.push(resolve));
    }
  }

  /**
   * The player took `item`. Only a sentence already counted as ahead frees room: the player often
   * takes the first sentence before its synthesis has begun, and counting that would let the
   * synthesis run one sentence further ahead than LOOKAHEAD allows.
   */
  #freeRoom(item: Item): void {
    item.taken = true;
    if (!item.synthStarted) return;
    this.#ahead--;
    for (const w of this.#roomWaiters.splice(0)) w();
  }

  async #synthLoop(): Promise<void> {
    for await (const item of this.#toSynth) {
      // A model that never stops writing must not fill memory with audio nobody hears yet.
      await this.#room();
      if (this.#signal.aborted) return;
      item.synthStarted = true;
      if (!item.taken) this.#ahead++;
      try {
        // The first sentence is urgent: the listener is waiting for it. Later ones have the
        // previous sentence's play time to be ready.
        const urgent = this.#synthStarted++ === 0;
        for await (const packet of this.#synth(item.text, this.#signal, urgent)) item.packets.push(packet);
        item.packets.close();
      } catch (err) {
        item.failed = true;
        item.packets.fail(err);
        if (!isAbortError(err)) {
          const e = toVoiceError(err);
          this.#errors.push(e);
          this.#log.error({ err: e.message, code: e.code }, 'speech synthesis failed');
        }
      }
    }
  }

  async #playLoop(): Promise<void> {
    try {
      for await (const item of this.#toPlay) {
        try {
          // The player has taken this sentence: the worker may synthesize one more.
          this.#freeRoom(item);
          await this.#out.playPackets(item.text, item.packets);
          this.#spoken.push(item.text);
        } catch (err) {
          // Synthesis errors were recorded by the worker; aborts end the loop quietly.
          if (isAbortError(err)) return;
          if (item.failed) continue;
          const e = toVoiceError(err);
          this.#errors.push(e);
          this.#log.error({ err: e.message, code: e.code }, 'speech playback failed');
        } finally {
          this.#settled();
        }
      }
    } finally {
      this.#pending = 0;
      for (const w of this.#idleWaiters.splice(0)) w();
    }
  }
}
