/**
 * @module The downlink of one turn: the `tts start` / `sentence_start` / `tts stop` envelope around
 * paced Opus frames. `tts stop` goes out only after the device has had time to play what was
 * sent (the pacer knows when that is) plus a margin, because firmware before 2.2.2 cuts off queued
 * audio the moment it sees `tts stop` in auto mode.
 */
import { sleep } from '../../core/abort.ts';
import { realClock, type Clock } from '../../core/clock.ts';
import { isAbortError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import type { SessionMedia } from '../../audio/media/media.ts';
import { createPacer, type Pacer } from '../../audio/pacer/pacer.ts';
import type { DeviceChannel } from '../session/channel.ts';

export interface AudioOutOptions {
  channel: DeviceChannel;
  sessionId: string;
  /** Encodes PCM to Opus (in the session's media worker). */
  media: SessionMedia;
  frameMs: number;
  preBufferFrames: number;
  /** Audio kept queued on the device ahead of playback, so a busy moment here is not heard. */
  sendAheadMs: number;
  stopMarginMs: number;
  /** The turn's signal: abort stops sending within one frame. */
  signal: AbortSignal;
  log: Logger;
  /** Called when the first audio frame of the turn is handed to the socket. */
  onFirstFrame?: () => void;
  /**
   * Nothing is sent (not even `tts start`) before this resolves: a turn started before the end of
   * speech was confirmed prepares its audio but holds it. A rejection ends playback as an abort.
   */
  gate?: Promise<void>;
  /** Times the frames and the wait before `tts stop`. Default: the real clock. */
  clock?: Clock;
}

export class AudioOut {
  readonly #o: AudioOutOptions;
  readonly #pacer: Pacer;
  readonly #clock: Clock;
  #started = false;
  #stopped = false;
  #firstFrameAt: number | null = null;
  #framesSent = 0;
  /** Called with the first frame the current segment sends (segments play one after another). */
  #onSegmentFrame: (() => void) | undefined;

  constructor(opts: AudioOutOptions) {
    this.#o = opts;
    this.#clock = opts.clock ?? realClock;
    this.#pacer = createPacer({
      clock: this.#clock,
      frameMs: opts.frameMs,
      preBufferFrames: opts.preBufferFrames,
      leadMs: Math.max(opts.preBufferFrames * opts.frameMs, opts.sendAheadMs),
      signal: opts.signal,
      log: opts.log,
      send: (frame) => {
        if (this.#firstFrameAt === null) {
          this.#firstFrameAt = this.#clock.now();
          opts.onFirstFrame?.();
        }
        this.#framesSent++;
        opts.channel.sendAudio(frame);
        const first = this.#onSegmentFrame;
        this.#onSegmentFrame = undefined;
        first?.();
      },
    });
  }

  /** True once `tts start` went out. */
  get started(): boolean {
    return this.#started;
  }

  get framesSent(): number {
    return this.#framesSent;
  }

  get pacerStats(): Pacer['stats'] {
    return this.#pacer.stats;
  }

  /** Sends `tts start` once per turn. */
  start(): void {
    if (this.#started || this.#stopped) return;
    this.#started = true;
    this.#o.channel.sendJson({ type: 'tts', state: 'start', session_id: this.#o.sessionId });
  }

  /** A subtitle line without audio of its own (e.g. what the music tool is playing). */
  caption(text: string): void {
    this.start();
    if (this.#stopped || !text) return;
    this.#o.channel.sendJson({ type: 'tts', state: 'sentence_start', text, session_id: this.#o.sessionId });
  }

  /**
   * Plays one segment: `sentence_start` with its text (when given), then its PCM (at the downlink
   * rate) as paced Opus frames. Resolves when the last frame has been sent.
   */
  play(text: string | null, pcm: AsyncIterable<Int16Array>, onFirstFrame?: () => void): Promise<void> {
    return this.playPackets(text, this.#o.media.encode(pcm, this.#o.signal), onFirstFrame);
  }

  /** Like `play`, for audio that is already Opus at the downlink rate (the embedded TTS). */
  async playPackets(text: string | null, packets: AsyncIterable<Buffer>, onFirstFrame?: () => void): Promise<void> {
    if (this.#o.gate) await this.#o.gate;
    this.start();
    if (this.#stopped) return;
    this.#onSegmentFrame = onFirstFrame;
    // The subtitle goes out with the segment's first audio, so a segment whose synthesis fails
    // before producing anything shows nothing.
    const captioned = async function* (this: AudioOut): AsyncIterable<Buffer> {
      let first = true;
      for await (const packet of packets) {
        if (first && text) this.caption(text);
        first = false;
        yield packet;
      }
    }.call(this);
    await this.#pacer.play(captioned);
  }

  /**
   * Ends the turn's audio normally: waits until the device has played everything (plus the margin),
   * then sends `tts stop`. An abort during the wait sends it at once.
   */
  async finish(): Promise<void> {
    if (!this.#started || this.#stopped) return;
    const wait = this.#pacer.playbackEndsAt() - this.#clock.now() + this.#o.stopMarginMs;
    try {
      if (wait > 0) await sleep(wait, this.#o.signal, this.#clock);
    } catch (err) {
      if (!isAbortError(err)) throw err;
    }
    this.#sendStop();
  }

  /** Barge-in: stops sending at once and tells the device to stop. */
  stop(): void {
    this.#pacer.stop();
    if (this.#started) this.#sendStop();
    this.#stopped = true;
  }

  #sendStop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#o.channel.sendJson({ type: 'tts', state: 'stop', session_id: this.#o.sessionId });
  }

  /** When (on the clock, ms) the first frame was sent, or null. */
  get firstFrameAt(): number | null {
    return this.#firstFrameAt;
  }
}
