/**
 * @module The uplink of one session: Opus packets → PCM → VAD → utterances. In auto and realtime
 * mode the VAD decides where an utterance ends; in manual mode `listen stop` does. A short pre-roll
 * is kept so the first syllable, spoken before the VAD was sure, still reaches ASR.
 */
import type { Logger } from '../../../core/logger.ts';
import type { OpusCodec } from '../../../audio/opus/codec.ts';
import { concatInt16, durationMs } from '../../../audio/pcm.ts';
import type { VadStream } from '../../../audio/vad/vad.ts';
import type { ListenMode } from '../../../protocol/messages.ts';

export type ListenerEvent =
  | { type: 'speech_start' }
  | { type: 'utterance'; pcm: Int16Array; sampleRate: number; reason: 'vad' | 'manual' | 'max_length'; hadSpeech: boolean; endedAt: number };

export interface ListenerOptions {
  decoder: OpusCodec;
  vad: VadStream;
  log: Logger;
  /** Audio kept from before speech_start, in ms. */
  preRollMs: number;
  /** An utterance longer than this is cut and answered. */
  maxUtteranceMs: number;
  onEvent: (e: ListenerEvent) => void;
}

/**
 * The VAD confirms speech only after minSpeechMs of it (plus its own frame latency), so the
 * pre-roll buffer reaches back this much further than `preRollMs`.
 */
const PRE_ROLL_SLACK_MS = 1500;

/** Packets allowed to wait for the VAD: 3 s of audio, far more than network jitter bunches up. */
const MAX_BACKLOG = 50;

/** DTX packets during silence are this small; they carry no speech. */
const DTX_MAX_BYTES = 2;

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
  /** Samples fed to the VAD since the last reset (the VAD's own position). */
  #position = 0;
  #utterance: Int16Array[] = [];
  #utteranceSamples = 0;
  #chain: Promise<void> = Promise.resolve();
  #closed = false;
  #generation = 0;
  /** Decoded frames that failed (corrupt packets). */
  corruptPackets = 0;
  /** Packets dropped because the device sent faster than they could be processed. */
  droppedPackets = 0;
  /** Packets waiting for the VAD. */
  #backlog = 0;

  constructor(opts: ListenerOptions) {
    this.#o = opts;
  }

  get active(): boolean {
    return this.#active;
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

  /** `listen stop` (manual mode): the utterance is whatever was collected. */
  stop(): void {
    if (!this.#active) return;
    const gen = this.#generation;
    // Let queued packets finish decoding first, so the tail of the speech is included.
    this.#chain = this.#chain.then(() => {
      if (gen !== this.#generation || !this.#active) return;
      this.#emitUtterance('manual');
    });
  }

  push(packet: Uint8Array): void {
    if (this.#closed || (!this.#active && !this.#monitor)) return;
    // A device sends one packet per 60 ms. One that floods faster than the VAD keeps up would
    // queue work and memory without bound: past the backlog limit its packets are dropped.
    if (this.#backlog >= MAX_BACKLOG) {
      this.droppedPackets++;
      if (this.droppedPackets === 1) this.#o.log.warn({ backlog: this.#backlog }, 'uplink faster than real time; dropping packets');
      return;
    }
    this.#backlog++;
    const gen = this.#generation;
    const decoded = this.#o.decoder.decode(packet);
    let pcm: Int16Array;
    if (decoded) pcm = decoded;
    else {
      // A corrupt packet still took 60 ms of the device's time: count it as silence so the
      // VAD's silence timer keeps running.
      this.corruptPackets++;
      pcm = new Int16Array(this.#o.decoder.frameSamples);
    }
    if (packet.byteLength <= DTX_MAX_BYTES) pcm = new Int16Array(pcm.length);
    this.#chain = this.#chain
      .then(() => this.#process(pcm, gen))
      .catch((err: unknown) => {
        this.#o.log.error({ err }, 'uplink processing failed');
      })
      .finally(() => {
        this.#backlog--;
      });
  }

  close(): void {
    this.#closed = true;
    this.#active = false;
    this.#monitor = false;
    this.#generation++;
    this.#o.vad.close();
  }

  async #process(pcm: Int16Array, gen: number): Promise<void> {
    if (gen !== this.#generation || this.#closed) return;
    const at = this.#position;
    this.#position += pcm.length;
    if (this.#active) this.#collect(pcm, at);
    const events = await this.#o.vad.push(pcm);
    if (gen !== this.#generation) return;
    for (const e of events) {
      if (e.type === 'speech_start') {
        this.#hadSpeech = true;
        if (this.#active) this.#startUtterance(e.atMs);
        this.#o.onEvent({ type: 'speech_start' });
      } else {
        if (this.#active && this.#mode !== 'manual') this.#emitUtterance('vad');
      }
      if (gen !== this.#generation) return;
    }
    if (this.#active && durationMs(this.#utteranceSamples, this.#o.decoder.sampleRate) >= this.#o.maxUtteranceMs) {
      this.#emitUtterance('max_length');
    }
  }

  #collect(pcm: Int16Array, at: number): void {
    if (this.#mode === 'manual' || this.#hadSpeech) {
      this.#utterance.push(pcm);
      this.#utteranceSamples += pcm.length;
      return;
    }
    // Until the VAD confirms speech (it needs minSpeechMs of it), keep enough recent audio to
    // reach back to where the speech began, plus the pre-roll.
    this.#preRoll.push({ at, pcm });
    const rate = this.#o.decoder.sampleRate;
    const keep = ((this.#o.preRollMs + PRE_ROLL_SLACK_MS) * rate) / 1000;
    while (this.#preRoll.length > 1 && at - (this.#preRoll[1]?.at ?? at) >= keep) this.#preRoll.shift();
  }

  /** Speech confirmed: the utterance starts `preRollMs` before where the VAD says speech began. */
  #startUtterance(atMs: number): void {
    const from = Math.max(0, Math.round(((atMs - this.#o.preRollMs) * this.#o.decoder.sampleRate) / 1000));
    for (const c of this.#preRoll) {
      const end = c.at + c.pcm.length;
      if (end <= from) continue;
      const part = c.at >= from ? c.pcm : c.pcm.subarray(from - c.at);
      this.#utterance.push(part);
      this.#utteranceSamples += part.length;
    }
    this.#preRoll = [];
  }

  #emitUtterance(reason: 'vad' | 'manual' | 'max_length'): void {
    const pcm = concatInt16(this.#utterance);
    const hadSpeech = this.#hadSpeech;
    this.#active = false;
    this.#reset();
    this.#o.onEvent({ type: 'utterance', pcm, sampleRate: this.#o.decoder.sampleRate, reason, hadSpeech, endedAt: performance.now() });
  }

  #reset(): void {
    this.#generation++;
    this.#hadSpeech = false;
    this.#preRoll = [];
    this.#position = 0;
    this.#utterance = [];
    this.#utteranceSamples = 0;
    this.#o.vad.reset();
  }
}
