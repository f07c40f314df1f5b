/**
 * @module The uplink of one session: Opus packets → PCM → VAD → utterances. In auto and realtime
 * mode the utterance ends when the silence after the last voiced frame is as long as the end of
 * turn asks for (`voice/turn-end/`: shorter when the transcript so far looks complete, longer when
 * it ends unfinished); in manual mode `listen stop` ends it. The silence is measured on the audio
 * (samples decoded), not on a timer, so a late or bunched packet cannot end a turn early. A short
 * pre-roll is kept so the first syllable, spoken before the VAD was sure, still reaches ASR.
 */
import type { Logger } from '../../core/logger.ts';
import type { SessionMedia, UplinkResult } from '../../audio/media/media.ts';
import { concatInt16, durationMs } from '../../audio/pcm/pcm.ts';
import type { ListenMode } from '../../protocol/messages.ts';
import type { Completeness } from '../turn-end/completeness.ts';
import type { EndOfTurn } from '../turn-end/end-of-turn.ts';

export type ListenerEvent =
  | { type: 'speech_start' }
  /**
   * Audio of the utterance being collected, in order, from its start (the pre-roll first); `first`
   * marks a new utterance's first audio. A streaming recogniser is fed from these.
   */
  | { type: 'audio'; pcm: Int16Array; first: boolean }
  /**
   * The VAD heard a pause that may end the utterance (auto and realtime mode, with `pauseMs`):
   * `pcm()` copies the utterance so far (call it at once, or not at all: most pauses start no
   * turn, and a device may pause as often as it likes). `resume` follows if the user speaks again
   * before the end of speech is confirmed (by the `utterance` event).
   */
  | { type: 'pause'; pcm: () => Int16Array; sampleRate: number }
  | { type: 'resume' }
  | {
      type: 'utterance';
      pcm: Int16Array;
      sampleRate: number;
      reason: 'vad' | 'manual' | 'max_length';
      hadSpeech: boolean;
      endedAt: number;
      /** Silence after the last voiced frame when the end was decided (0 unless `reason` is `vad`). */
      silenceMs: number;
    };

export interface ListenerOptions {
  /** Decodes and runs the VAD, off this thread when media workers are on. */
  media: SessionMedia;
  log: Logger;
  /** The clock an utterance's end is read on (the turns'). Default: the real one. */
  now?: () => number;
  /** Audio kept from before speech_start, in ms. */
  preRollMs: number;
  /** An utterance longer than this is cut and answered. */
  maxUtteranceMs: number;
  /** Decides how much silence ends the utterance (auto and realtime mode). */
  endOfTurn: EndOfTurn;
  /** Silence after which a tentative `pause` event is emitted, once per silent run; 0: none. */
  earlyStartMs: number;
  onEvent: (e: ListenerEvent) => void;
}

/**
 * The VAD confirms speech only after minSpeechMs of it (plus its own frame latency), so the
 * pre-roll buffer reaches back this much further than `preRollMs`.
 */
const PRE_ROLL_SLACK_MS = 1500;

/** Packets allowed to wait for the VAD: 3 s of audio, far more than network jitter bunches up. */
const MAX_BACKLOG = 50;

export class Listener {
  readonly #o: ListenerOptions;
  #mode: ListenMode = 'auto';
  /** Collecting an utterance (between listen start and its end). */
  #active = false;
  /** VAD keeps running while the answer plays, only to detect barge-in (realtime). */
  #monitor = false;
  #hadSpeech = false;
  /** Recent audio before speech was confirmed, with each chunk's start position (samples). */
  #preRoll: Array<{ at: number; pcm: Int16Array }> = [];
  /** Samples received since the last reset (positions of the pre-roll chunks). */
  #position = 0;
  /**
   * Where the VAD's own positions start in `#position` terms. Packets already on their way to the
   * media worker when the VAD is reset were scored with the old state: their audio still counts
   * (in a barge-in it is the user's next words), their VAD events do not, and the fresh VAD's
   * positions begin after them.
   */
  #vadZero = 0;
  /** Bumped by every VAD reset; each packet remembers the epoch it was sent in. */
  #vadEpoch = 0;
  /** Where the VAD's latest speech began (in `#position` terms). */
  #speechStartAt = 0;
  #utterance: Int16Array[] = [];
  #utteranceSamples = 0;
  /** Where the current silence inside speech began (in `#position` terms); undefined while voiced. */
  #silenceFrom: number | undefined;
  /** That silence's length at the last packet, in ms. */
  #silenceMs = 0;
  /** The `pause` event was emitted for the current silent run. */
  #pauseAnnounced = false;
  #chain: Promise<void> = Promise.resolve();
  #closed = false;
  #generation = 0;
  /** Decoded frames that failed (corrupt packets). */
  corruptPackets = 0;
  /** Packets whose decoding or VAD failed (e.g. their media worker was lost). */
  failedPackets = 0;
  /** Packets dropped because the device sent faster than they could be processed. */
  droppedPackets = 0;
  /** Packets waiting for the VAD. */
  #backlog = 0;

  constructor(opts: ListenerOptions) {
    this.#o = opts;
    // A verdict that changes by itself (the model judge answered) may end the utterance now.
    opts.endOfTurn.onChange(() => {
      if (!this.#closed && this.#active && this.#mode !== 'manual' && this.#silenceFrom !== undefined)
        this.#checkSilence();
    });
  }

  get active(): boolean {
    return this.#active;
  }

  /** Packets sent to the VAD whose results have not been handled yet. */
  get pending(): number {
    return this.#backlog;
  }

  /** The end of turn's verdict on the utterance's transcript so far. */
  get verdict(): Completeness {
    return this.#o.endOfTurn.verdict;
  }

  /** `listen start`: a new utterance begins (VAD state reset). */
  start(mode: ListenMode): void {
    this.#mode = mode;
    this.#reset();
    this.#active = true;
    this.#monitor = false;
  }

  /** Stops collecting (the turn runs). With `monitor`, VAD keeps watching for barge-in. */
  pause(monitor: boolean): void {
    this.#active = false;
    this.#monitor = monitor;
    this.#reset();
  }

  /**
   * Realtime barge-in: the speech the VAD just found over the answer becomes the next utterance.
   * The VAD is not reset (it is in the middle of that speech) and the pre-roll kept while
   * monitoring supplies its beginning, so nothing the user said is lost.
   */
  bargeIn(): void {
    if (this.#closed || !this.#monitor) return;
    this.#mode = 'realtime';
    this.#active = true;
    this.#monitor = false;
    this.#hadSpeech = true;
    this.#utterance = [];
    this.#utteranceSamples = 0;
    this.#silenceFrom = undefined;
    this.#silenceMs = 0;
    this.#pauseAnnounced = false;
    this.#o.endOfTurn.reset();
    this.#startUtterance(this.#speechStartAt);
  }

  /** `listen stop` (manual mode): the utterance is whatever was collected. */
  stop(): void {
    if (!this.#active) return;
    const gen = this.#generation;
    // Let queued packets finish decoding first, so the tail of the speech is included.
    this.#chain = this.#chain.then(() => {
      if (gen !== this.#generation || !this.#active) return;
      this.#emitUtterance('manual', 0);
    });
  }

  push(packet: Uint8Array): void {
    if (this.#closed || (!this.#active && !this.#monitor)) return;
    // A device sends one packet per 60 ms. One that floods faster than the VAD keeps up would
    // queue work and memory without bound: past the backlog limit its packets are dropped.
    if (this.#backlog >= MAX_BACKLOG) {
      this.droppedPackets++;
      if (this.droppedPackets === 1)
        this.#o.log.warn({ backlog: this.#backlog }, 'uplink faster than real time; dropping packets');
      return;
    }
    this.#backlog++;
    const gen = this.#generation;
    const epoch = this.#vadEpoch;
    // Sent at once (the media worker keeps each session's packets in order); the results are
    // handled in order on this chain.
    const result = this.#o.media.uplink(packet);
    this.#chain = this.#chain
      .then(() => result)
      .then((r) => this.#process(r, gen, epoch))
      .catch((err: unknown) => {
        if (this.#closed) return;
        // A lost media worker fails every packet in flight and every one sent until the session
        // closes: the first failure is logged, then every 100th, not one line per packet.
        this.failedPackets++;
        if (this.failedPackets === 1 || this.failedPackets % 100 === 0) {
          this.#o.log.error(
            { err: err instanceof Error ? err.message : String(err), failedPackets: this.failedPackets },
            'uplink processing failed',
          );
        }
      })
      .finally(() => {
        this.#backlog--;
      });
  }

  close(): void {
    this.#closed = true;
    this.#o.endOfTurn.reset();
    this.#active = false;
    this.#monitor = false;
    this.#generation++;
  }

  #process(r: UplinkResult, gen: number, epoch: number): void {
    if (r.corrupt) this.corruptPackets++;
    if (this.#closed) return;
    const { pcm, events } = r;
    const at = this.#position;
    this.#position += pcm.length;
    if (this.#active || this.#monitor) this.#collect(pcm, at);
    // The audio event may have ended the utterance (a partial transcript judged while it was fed).
    if (gen !== this.#generation) return;
    if (epoch !== this.#vadEpoch) {
      this.#vadZero = this.#position;
      return;
    }
    const rate = this.#o.media.uplinkSampleRate;
    for (const e of events) {
      if (e.type === 'speech_start') {
        this.#hadSpeech = true;
        this.#silenceFrom = undefined;
        this.#speechStartAt = this.#vadZero + (e.atMs * rate) / 1000;
        if (this.#active) this.#startUtterance(this.#speechStartAt);
        this.#o.onEvent({ type: 'speech_start' });
      } else if (this.#active && this.#mode !== 'manual') {
        if (e.type === 'speech_end') this.#emitUtterance('vad', this.#o.endOfTurn.silenceNeededMs);
        else if (e.type === 'pause') this.#silenceFrom = this.#vadZero + (e.atMs * rate) / 1000;
        else this.#resumed();
      }
      if (gen !== this.#generation) return;
    }
    if (this.#active && this.#mode !== 'manual' && this.#silenceFrom !== undefined) {
      this.#silenceMs = durationMs(this.#position - this.#silenceFrom, rate);
      this.#checkSilence();
      if (gen !== this.#generation) return;
    }
    if (this.#active && durationMs(this.#utteranceSamples, rate) >= this.#o.maxUtteranceMs) {
      this.#emitUtterance('max_length', 0);
    }
  }

  /**
   * The latest transcript of the utterance so far (a streaming partial, or an early start's): the
   * end of turn judges it, and a silence already long enough for the new verdict ends it now.
   */
  transcript(text: string): void {
    if (this.#closed || !this.#active) return;
    this.#o.endOfTurn.transcript(text);
    if (this.#mode !== 'manual' && this.#silenceFrom !== undefined) this.#checkSilence();
  }

  /** Voice came back before the silence ended the utterance. */
  #resumed(): void {
    this.#silenceFrom = undefined;
    this.#silenceMs = 0;
    const announced = this.#pauseAnnounced;
    this.#pauseAnnounced = false;
    if (announced) this.#o.onEvent({ type: 'resume' });
  }

  #checkSilence(): void {
    const early = this.#o.earlyStartMs;
    if (early > 0 && !this.#pauseAnnounced && this.#silenceMs >= early && !this.#o.endOfTurn.ends(this.#silenceMs)) {
      this.#pauseAnnounced = true;
      const parts = this.#utterance;
      this.#o.onEvent({ type: 'pause', pcm: () => concatInt16(parts), sampleRate: this.#o.media.uplinkSampleRate });
    }
    if (this.#o.endOfTurn.ends(this.#silenceMs)) this.#emitUtterance('vad', this.#silenceMs);
  }

  #collect(pcm: Int16Array, at: number): void {
    if (this.#active && (this.#mode === 'manual' || this.#hadSpeech)) {
      this.#append(pcm);
      return;
    }
    // Until the VAD confirms speech (it needs minSpeechMs of it), keep enough recent audio to
    // reach back to where the speech began, plus the pre-roll.
    this.#preRoll.push({ at, pcm });
    const rate = this.#o.media.uplinkSampleRate;
    const keep = ((this.#o.preRollMs + PRE_ROLL_SLACK_MS) * rate) / 1000;
    while (this.#preRoll.length > 1 && at - (this.#preRoll[1]?.at ?? at) >= keep) this.#preRoll.shift();
  }

  /** Speech confirmed: the utterance starts `preRollMs` before `atSample`, where the VAD says speech began. */
  #startUtterance(atSample: number): void {
    const rate = this.#o.media.uplinkSampleRate;
    const from = Math.max(0, Math.round(atSample - (this.#o.preRollMs * rate) / 1000));
    for (const c of this.#preRoll) {
      const end = c.at + c.pcm.length;
      if (end <= from) continue;
      const part = c.at >= from ? c.pcm : c.pcm.subarray(from - c.at);
      this.#append(part);
    }
    this.#preRoll = [];
  }

  #append(pcm: Int16Array): void {
    const first = this.#utteranceSamples === 0;
    this.#utterance.push(pcm);
    this.#utteranceSamples += pcm.length;
    this.#o.onEvent({ type: 'audio', pcm, first });
  }

  #emitUtterance(reason: 'vad' | 'manual' | 'max_length', silenceMs: number): void {
    const pcm = concatInt16(this.#utterance);
    const hadSpeech = this.#hadSpeech;
    this.#active = false;
    this.#reset();
    this.#o.onEvent({
      type: 'utterance',
      pcm,
      sampleRate: this.#o.media.uplinkSampleRate,
      reason,
      hadSpeech,
      endedAt: this.#o.now?.() ?? performance.now(),
      silenceMs: Math.round(silenceMs),
    });
  }

  #reset(): void {
    this.#generation++;
    this.#hadSpeech = false;
    this.#preRoll = [];
    this.#position = 0;
    this.#vadZero = 0;
    this.#vadEpoch++;
    this.#utterance = [];
    this.#utteranceSamples = 0;
    this.#silenceFrom = undefined;
    this.#silenceMs = 0;
    this.#pauseAnnounced = false;
    this.#o.endOfTurn.reset();
    this.#o.media.resetVad();
  }
}
