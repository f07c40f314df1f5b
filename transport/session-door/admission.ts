/**
 * @module Admission control: decides whether a new device may connect now. A saturated server
 * refuses newcomers (HTTP 503 + Retry-After, before the WebSocket upgrade) so the devices already
 * talking keep real-time audio, instead of every device degrading together.
 *
 * Signals (each 0 disables it):
 * - event-loop delay of the main thread (`perf_hooks.monitorEventLoopDelay`, 10 ms resolution):
 *   the p99 of each ~1 s window (with at most ~100 samples a window, its worst stall), and the
 *   judged value is the lower of the last two complete windows: the loop must have stalled in
 *   both, i.e. for one to two seconds. One GC pause, a start-up burst or a synchronous spawn
 *   fills only one window and turns nobody away (judging a single window made this repo's own
 *   test suite, on a loaded 2-core machine, see 503s for servers that were otherwise idle);
 *   a saturated loop stalls in every window and is refused after about two seconds. 200 ms is the
 *   default limit: a third of the audio the pacer keeps ahead on each device (600 ms), so a loop
 *   stalling that badly, second after second, is close to being heard.
 * - media-worker pressure: queued media jobs per worker, read from an injected `load()` (the
 *   worker pool provides it; without one the signal is ignored).
 * Each signal has hysteresis: once over its limit it refuses until the value is back under
 * `resumeRatio` (80 %) of the limit, so admission does not flap at the threshold.
 *
 * Why not `@fastify/under-pressure`: it gates every route from an onRequest hook, and devices'
 * OTA and the health/metrics probes must keep answering while the server is loaded (only a new
 * device session is gated here: the WebSocket upgrade, an MQTT hello); it judges the *mean*
 * delay of each sample interval, which dilutes a 400 ms stall among a hundred 10 ms samples; and
 * it has neither hysteresis nor a place for the media-queue signal. This is the same measurement
 * (one ELD histogram) in ~100 lines.
 *
 * The session budget (`server.maxSessions`) is not judged here: the session door
 * (device-sessions.ts) keeps it, with its reconnecting-device exception and its own refusal
 * reason (`capacity`), and asks this gate after it.
 */
import { monitorEventLoopDelay, type ELDHistogram } from 'node:perf_hooks';

/** What the media-worker pool reports: queued media jobs per worker. */
export interface MediaLoad {
  queueDepth: number;
}

/** Which signal refused a device (the `reason` of the 503 body). */
export type OverloadSignal = 'event_loop_delay' | 'media_queue';

export type AdmissionVerdict = { ok: true } | { ok: false; signal: OverloadSignal; value: number; limit: number };

export interface AdmissionOptions {
  /** Refuse while the windowed event-loop delay exceeds this (ms); 0 disables. */
  maxEventLoopDelayMs: number;
  /** Refuse while `load().queueDepth` exceeds this; 0 disables. */
  maxMediaQueue: number;
  /** Media-worker pressure; undefined: the signal is ignored. */
  load?: () => MediaLoad;
  /** Length of one event-loop delay window. Default 1000 ms. */
  windowMs?: number;
  /** Histogram resolution. Default 10 ms. */
  resolutionMs?: number;
  /** Fraction of a limit a signal must fall under before devices are admitted again. Default 0.8. */
  resumeRatio?: number;
}

/** The part of AdmissionControl the app needs. */
export interface AdmissionGate {
  check(): AdmissionVerdict;
  close(): void;
}

export class AdmissionControl implements AdmissionGate {
  readonly #opts: Required<Omit<AdmissionOptions, 'load'>>;
  readonly #load: (() => MediaLoad) | undefined;
  readonly #histogram: ELDHistogram | undefined;
  readonly #timer: NodeJS.Timeout | undefined;
  /** p99 of the last two complete windows, ms (resolution subtracted), older first. */
  #windowsMs: [number, number] = [0, 0];
  #loopHot = false;
  #mediaHot = false;
  #closed = false;

  constructor(opts: AdmissionOptions) {
    this.#opts = {
      maxEventLoopDelayMs: opts.maxEventLoopDelayMs,
      maxMediaQueue: opts.maxMediaQueue,
      windowMs: opts.windowMs ?? 1000,
      resolutionMs: opts.resolutionMs ?? 10,
      resumeRatio: opts.resumeRatio ?? 0.8,
    };
    this.#load = opts.load;
    if (opts.maxEventLoopDelayMs > 0) {
      this.#histogram = monitorEventLoopDelay({ resolution: this.#opts.resolutionMs });
      this.#histogram.enable();
      this.#timer = setInterval(() => {
        this.#windowsMs = [this.#windowsMs[1], this.#p99Ms()];
        this.#histogram?.reset();
      }, this.#opts.windowMs);
      // Never keeps the process alive on its own.
      this.#timer.unref();
    }
  }

  /** p99 of the histogram as it stands, minus the resolution (what an idle loop records). */
  #p99Ms(): number {
    const h = this.#histogram;
    if (!h || h.count === 0) return 0;
    return Math.max(0, h.percentile(99) / 1e6 - this.#opts.resolutionMs);
  }

  /** The windowed event-loop delay the decision uses (ms): the lower of the last two windows' p99; 0 when disabled. */
  eventLoopDelayMs(): number {
    if (this.#closed) return 0;
    return Math.min(this.#windowsMs[0], this.#windowsMs[1]);
  }

  /** Queued media jobs per worker now; undefined without a source (or when it throws). */
  mediaQueueDepth(): number | undefined {
    if (!this.#load) return undefined;
    try {
      const depth = this.#load().queueDepth;
      return Number.isFinite(depth) ? depth : undefined;
    } catch {
      // A broken load source must not lock every device out: the signal is ignored.
      return undefined;
    }
  }

  /** Over the limit, or still above `resumeRatio` of it after having been over. */
  #judge(hot: boolean, value: number, limit: number): boolean {
    if (limit <= 0) return false;
    return hot ? value > limit * this.#opts.resumeRatio : value > limit;
  }

  /** May a new device connect now? */
  check(): AdmissionVerdict {
    if (this.#closed) return { ok: true };
    const { maxEventLoopDelayMs, maxMediaQueue } = this.#opts;
    const delay = this.eventLoopDelayMs();
    this.#loopHot = this.#judge(this.#loopHot, delay, maxEventLoopDelayMs);
    const depth = this.mediaQueueDepth();
    this.#mediaHot = depth !== undefined && this.#judge(this.#mediaHot, depth, maxMediaQueue);
    if (this.#loopHot)
      return { ok: false, signal: 'event_loop_delay', value: Math.round(delay), limit: maxEventLoopDelayMs };
    if (this.#mediaHot) return { ok: false, signal: 'media_queue', value: depth ?? 0, limit: maxMediaQueue };
    return { ok: true };
  }

  /** Stops the window timer and disables the histogram. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#histogram?.disable();
  }
}
