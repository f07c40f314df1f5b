/**
 * Downlink playback: Opus packets → decoder → AudioBuffers scheduled back to back on one play
 * head, so consecutive 60 ms frames join without gaps. A short lead absorbs network jitter; a cap
 * on how far ahead we schedule stops pile-up (the firmware keeps at most 2.4 s). `stop()`
 * silences at once and discards everything queued or still decoding.
 */
import { createOpusDecoder } from './opus-codec.js';

/** Scheduling lead when the play head has run dry, in s: covers jitter of paced frames. */
const LEAD_S = 0.12;
/** Never schedule further ahead than this, in s (frames beyond are dropped, as the firmware does). */
const MAX_AHEAD_S = 2.4;

export class Player {
  constructor() {
    /** @type {AudioContext | null} */
    this.ctx = null;
    /** @type {GainNode | null} */
    this.gain = null;
    /** @type {import('./opus-codec.js').OpusDecoderLike | null} */
    this.decoder = null;
    this.volume = 70;
    this.nextTime = 0;
    /** Frames from before an abort may still come out of the decoder; they carry an old epoch. */
    this.epoch = 0;
    /** @type {Set<AudioBufferSourceNode>} */
    this.sources = new Set();
    /** @type {Array<() => void>} */
    this.drainWaiters = [];
    this.pendingDecodes = 0;
    /** Called with the wall-clock time (performance.now() ms) the first frame of a run will sound. */
    this.onFirstSound = (/** @type {number} */ _at) => {};
    this.stats = {
      received: 0,
      decoded: 0,
      scheduled: 0,
      played: 0,
      cancelled: 0,
      dropped: 0,
      underruns: 0,
      decodeErrors: 0,
    };
  }

  /** Creates the AudioContext; call from a user gesture so the browser lets it run. */
  unlock() {
    if (!this.ctx) {
      this.ctx = new AudioContext({ latencyHint: 'interactive' });
      this.gain = this.ctx.createGain();
      this.gain.connect(this.ctx.destination);
      this.setVolume(this.volume);
    }
    if (this.ctx.state === 'suspended') void this.ctx.resume();
  }

  /**
   * Opens a decoder for the server's downlink parameters.
   * @param {'webcodecs'|'wasm'} kind
   * @param {number} sampleRate
   * @param {(err: Error) => void} onError
   */
  async configure(kind, sampleRate, onError) {
    this.decoder?.close();
    this.decoder = null;
    this.decoder = await createOpusDecoder(
      kind,
      sampleRate,
      (pcm, rate) => this.#schedule(pcm, rate, this.epoch),
      (err) => {
        this.stats.decodeErrors++;
        onError(err);
      },
    );
  }

  /** @param {number} v 0–100 */
  setVolume(v) {
    this.volume = Math.max(0, Math.min(100, Math.round(v)));
    if (this.gain && this.ctx) {
      // Perceptual curve: a squared gain makes the slider's middle sound like the middle.
      const g = (this.volume / 100) ** 2;
      this.gain.gain.setTargetAtTime(g, this.ctx.currentTime, 0.015);
    }
  }

  /** @param {Uint8Array} packet one downlink Opus packet */
  push(packet) {
    this.stats.received++;
    if (!this.decoder) {
      this.stats.dropped++;
      return;
    }
    this.decoder.decode(packet);
  }

  /**
   * @param {Float32Array} pcm
   * @param {number} rate
   * @param {number} epoch
   */
  #schedule(pcm, rate, epoch) {
    const ctx = this.ctx;
    if (!ctx || !this.gain || epoch !== this.epoch || pcm.length === 0) return;
    this.stats.decoded++;
    const now = ctx.currentTime;
    const fresh = this.nextTime < now + 0.01;
    if (fresh) {
      if (this.sources.size > 0) this.stats.underruns++;
      this.nextTime = now + LEAD_S;
    }
    if (this.nextTime - now > MAX_AHEAD_S) {
      this.stats.dropped++;
      return;
    }
    const buf = ctx.createBuffer(1, pcm.length, rate);
    buf.copyToChannel(pcm, 0);
    const src = ctx.createBufferSource();
    src.buffer = buf;
    src.connect(this.gain);
    src.onended = () => {
      this.sources.delete(src);
      src.disconnect();
      // Sources cut by stop() also end here; only those that sounded to the end count as played.
      if (/** @type {any} */ (src).cancelled) this.stats.cancelled++;
      else this.stats.played++;
      if (this.sources.size === 0) for (const w of this.drainWaiters.splice(0)) w();
    };
    src.start(this.nextTime);
    if (fresh && this.sources.size === 0) {
      const latencyMs = ((ctx.baseLatency || 0) + (ctx.outputLatency || 0)) * 1000;
      this.onFirstSound(performance.now() + (this.nextTime - now) * 1000 + latencyMs);
    }
    this.nextTime += buf.duration;
    this.sources.add(src);
    this.stats.scheduled++;
  }

  /** True while something is scheduled to sound. */
  get playing() {
    return this.sources.size > 0;
  }

  /** Silences at once and discards queued and in-decoder audio. */
  stop() {
    this.epoch++;
    this.decoder?.reset();
    for (const src of this.sources) {
      /** @type {any} */ (src).cancelled = true;
      try {
        src.stop();
      } catch {
        // already stopped
      }
    }
    this.nextTime = 0;
  }

  /**
   * Resolves when everything scheduled has played (or after `maxMs`).
   * @param {number} maxMs
   */
  drained(maxMs) {
    if (this.sources.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const t = setTimeout(resolve, maxMs);
      this.drainWaiters.push(() => {
        clearTimeout(t);
        resolve(undefined);
      });
    });
  }

  close() {
    this.stop();
    this.decoder?.close();
    this.decoder = null;
    void this.ctx?.close();
    this.ctx = null;
    this.gain = null;
  }
}
