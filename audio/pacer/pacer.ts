/**
 * @module Real-time pacing of downlink Opus frames. The device plays frames back to back and
 * silently drops what does not fit its 2.4 s queue, so the server sends a small pre-buffer at
 * once and then one frame per frame duration, keeping the device's queue at a constant lead.
 *
 * The model: `playEnd` is when the device will have played everything sent so far. A frame is
 * sent while the lead (`playEnd - now`) stays within the target lead (`leadMs`, or
 * `preBufferFrames × frameMs` capped by `maxAheadMs`). Lateness of the event loop therefore
 * never causes a burst larger than the target: after a stall the pacer refills it and carries on.
 *
 * A lead larger than the pre-buffer is built up, not sent at once: when the device's queue is
 * empty the pre-buffer goes out, then the allowed lead grows by 1 ms per ms, i.e. one frame every
 * half frame duration, until it reaches the target (420 ms later for 3 frames → 600 ms). Why: the
 * encoder then has 240 ms, not 60 ms, before a new answer's 11th frame is due, which is time to
 * start other answers when many start at once, and the device still sees no interval over a frame.
 *
 * Every pacer on the same clock shares one scheduler: a single timer armed for the earliest due
 * frame, so 100 concurrent pacers cost one timer callback per due instant, not 100 setTimeout
 * chains. Time is read from an injected `Clock` (the real one by default), so tests run the
 * cadence on a clock they advance by hand.
 */
import { nextUnlessAborted } from '../../core/abort.ts';
import { realClock, type Clock, type TimerHandle } from '../../core/clock.ts';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';

/** The device's decode queue: 40 packets of 60 ms (xiaozhi `MAX_DECODE_PACKETS_IN_QUEUE`). */
export const DEVICE_BUFFER_MS = 2400;
const DEFAULT_PRE_BUFFER_FRAMES = 3;
const DEFAULT_MAX_AHEAD_MS = 360;
/** Frames queued locally ahead of sending; bounds how far the producer (TTS, encoder) runs ahead. */
const LOCAL_QUEUE_FRAMES = 4;
/** A frame due this soon is sent in the current tick: timers fire ~1 ms late anyway. */
const EARLY_MS = 2;
/**
 * A send interval longer than a frame by more than this is a late interval (65 ms for 60 ms
 * frames): the measure the Java xiaozhi server publishes, here counted as sent.
 */
const LATE_INTERVAL_MARGIN_MS = 5;
/** How fast the allowed lead grows after the pre-buffer: ms of lead per ms of time (1: frames at twice real time). */
const LEAD_RAMP = 1;

/**
 * When (ms after a stream started on an empty device queue) the pacer may send frame `index`
 * (0-based), given the pre-buffer, the target lead and the frame duration: the schedule the media
 * workers encode against.
 */
export function rampSendTime(index: number, preMs: number, leadMs: number, frameMs: number): number {
  const played = (index + 1) * frameMs;
  return Math.max(0, (played - preMs) / (1 + LEAD_RAMP), played - leadMs);
}

export interface PacerOptions {
  /** Duration of each frame in ms (60 for xiaozhi). */
  frameMs: number;
  /** Frames sent at once when playback starts from an empty device queue. Default 3. */
  preBufferFrames?: number;
  /** Hard cap of audio queued on the device, in ms. Default 360; never more than 2400. */
  maxAheadMs?: number;
  /**
   * Audio kept queued on the device, in ms (overrides `preBufferFrames` × frameMs and the cap;
   * never more than 2400). A lead of several frames keeps playback gapless when this thread is
   * briefly busy: the device plays from its queue while the next frames wait for a free moment.
   */
  leadMs?: number;
  /** Delivers one frame to the device (e.g. a WebSocket send). A throw stops the pacer. */
  send: (frame: Buffer) => void;
  signal: AbortSignal;
  log?: Logger;
  /** A frame sent this much (ms) after it was due counts as late. Default frameMs / 3. */
  lateThresholdMs?: number;
  /** Where time is read and timers are armed. Default: the real clock. */
  clock?: Clock;
}

export interface PacerStats {
  framesSent: number;
  /** Frames sent more than `lateThresholdMs` after they were due (scheduler lateness). */
  lateFrames: number;
  /** Worst scheduler lateness seen (ms). */
  maxLateMs: number;
  /** Times the device ran dry while frames were still expected (producer or scheduler too slow). */
  underruns: number;
  /** Intervals between two frames sent (across `play` calls, until `stop`). */
  intervals: number;
  /** Of those, intervals over a frame's duration + 5 ms (over 65 ms for 60 ms frames). */
  lateIntervals: number;
}

export interface PacerResult {
  /** Frames this `play` call sent. */
  framesSent: number;
  /** True when `stop()` or the signal ended this call before its frames were all sent. */
  stopped: boolean;
}

export interface Pacer {
  /**
   * Sends `frames` at real-time cadence; resolves when the last one was sent. Calls queue up
   * behind each other and the cadence is continuous across them (one sentence after another).
   * Rejects with an Aborted VoiceError if the signal aborts, or with the error `send` threw.
   */
  play(frames: AsyncIterable<Buffer>): Promise<PacerResult>;
  /** When (on the pacer's clock, ms) the device will have played everything sent so far. */
  playbackEndsAt(): number;
  /** Stops sending at once; queued frames are dropped and running `play` calls resolve `stopped`. */
  stop(): void;
  readonly stats: PacerStats;
}

interface QueuedFrame {
  frame: Buffer;
  /** When the frame became available (ms). */
  readyAt: number;
}

/** The shared scheduler: one timer for every pacer on one clock. */
class PacerScheduler {
  readonly clock: Clock;
  readonly #members = new Set<PacerImpl>();
  #timer: TimerHandle | undefined;
  #timerAt = Infinity;
  /** The timer's callback, made once: arming the timer allocates nothing but the timer. */
  readonly #onTimer = (): void => this.#tick();

  constructor(clock: Clock) {
    this.clock = clock;
  }

  add(p: PacerImpl): void {
    this.#members.add(p);
  }

  remove(p: PacerImpl): void {
    this.#members.delete(p);
    if (this.#members.size === 0 && this.#timer) {
      this.clock.clearTimeout(this.#timer);
      this.#timer = undefined;
      this.#timerAt = Infinity;
    }
  }

  /** Makes sure a tick happens no later than `at` (clock ms). */
  wake(at: number): void {
    if (!(at < this.#timerAt)) return;
    if (this.#timer) this.clock.clearTimeout(this.#timer);
    this.#timerAt = at;
    this.#timer = this.clock.setTimeout(this.#onTimer, Math.max(0, at - this.clock.now()));
  }

  #tick(): void {
    this.#timer = undefined;
    this.#timerAt = Infinity;
    const now = this.clock.now();
    let next = Infinity;
    for (const p of this.#members) {
      const due = p.service(now);
      if (due < next) next = due;
    }
    if (next < Infinity) this.wake(next);
  }
}

/** One scheduler per clock, made when a pacer first uses that clock. */
const schedulers = new WeakMap<Clock, PacerScheduler>();

function schedulerFor(clock: Clock): PacerScheduler {
  let s = schedulers.get(clock);
  if (!s) {
    s = new PacerScheduler(clock);
    schedulers.set(clock, s);
  }
  return s;
}

class PacerImpl implements Pacer {
  readonly #frameMs: number;
  readonly #targetLeadMs: number;
  /** Lead allowed at once when the device's queue is empty (the pre-buffer), ≤ the target. */
  readonly #preLeadMs: number;
  /** When the current ramp began (a frame sent to an empty device queue). */
  #rampFrom = -Infinity;
  readonly #send: (frame: Buffer) => void;
  readonly #signal: AbortSignal;
  readonly #log: Logger | undefined;
  readonly #lateThresholdMs: number;
  readonly #scheduler: PacerScheduler;
  readonly #clock: Clock;
  #queue: QueuedFrame[] = [];
  #playEnd = 0;
  /** Whether the current stream of frames has started (for underrun accounting). */
  #streaming = false;
  #chain: Promise<unknown> = Promise.resolve();
  /** Bumped by stop(): play calls from before a stop end as `stopped`. */
  #generation = 0;
  /** Ends the running play call's wait for its producer (stop, abort, send failure). */
  #stopHooks = new Set<() => void>();
  #spaceWaiter: (() => void) | undefined;
  #drainWaiter: (() => void) | undefined;
  #sendError: unknown;
  /** When the previous frame was sent (NaN: none since the start or the last stop). */
  #lastSentAt = NaN;
  readonly stats: PacerStats = {
    framesSent: 0,
    lateFrames: 0,
    maxLateMs: 0,
    underruns: 0,
    intervals: 0,
    lateIntervals: 0,
  };

  constructor(opts: PacerOptions) {
    if (!(opts.frameMs > 0)) throw new VoiceError(ErrorCode.ConfigInvalid, 'pacer: frameMs must be positive');
    this.#frameMs = opts.frameMs;
    const pre = Math.max(1, Math.floor(opts.preBufferFrames ?? DEFAULT_PRE_BUFFER_FRAMES));
    const cap = Math.min(opts.maxAheadMs ?? DEFAULT_MAX_AHEAD_MS, DEVICE_BUFFER_MS);
    const lead =
      opts.leadMs !== undefined ? Math.min(opts.leadMs, DEVICE_BUFFER_MS) : Math.min(pre * this.#frameMs, cap);
    // The lead can never be less than one frame: a frame is played while the next is in flight.
    this.#targetLeadMs = Math.max(this.#frameMs, lead);
    this.#preLeadMs = Math.min(this.#targetLeadMs, Math.max(this.#frameMs, pre * this.#frameMs));
    this.#send = opts.send;
    this.#signal = opts.signal;
    this.#log = opts.log;
    this.#lateThresholdMs = opts.lateThresholdMs ?? this.#frameMs / 3;
    this.#scheduler = schedulerFor(opts.clock ?? realClock);
    this.#clock = this.#scheduler.clock;
    this.#playEnd = this.#clock.now();
    if (this.#signal.aborted) return;
    this.#scheduler.add(this);
    this.#signal.addEventListener('abort', () => this.#dispose(), { once: true });
  }

  play(frames: AsyncIterable<Buffer>): Promise<PacerResult> {
    const generation = this.#generation;
    const run = this.#chain.then(() => this.#playOne(frames, generation));
    this.#chain = run.catch(() => undefined);
    return run;
  }

  playbackEndsAt(): number {
    return this.#playEnd;
  }

  stop(): void {
    this.#generation++;
    this.#queue = [];
    this.#streaming = false;
    this.#lastSentAt = NaN;
    this.#wakeWaiters();
  }

  #fireStopHooks(): void {
    for (const hook of this.#stopHooks) hook();
  }

  async #playOne(frames: AsyncIterable<Buffer>, generation: number): Promise<PacerResult> {
    if (this.#signal.aborted) throw new VoiceError(ErrorCode.Aborted, 'aborted', { cause: this.#signal.reason });
    const ended = (): boolean =>
      generation !== this.#generation || this.#signal.aborted || this.#sendError !== undefined;
    const sentBefore = this.stats.framesSent;
    const it = frames[Symbol.asyncIterator]();
    // Stop, abort and a failed send end the wait for the producer, so a slow producer cannot
    // hold the call open.
    const stopWaiting = new AbortController();
    const onStop = (): void => stopWaiting.abort();
    this.#stopHooks.add(onStop);
    let completed = false;
    try {
      for (;;) {
        if (ended()) break;
        const r = await nextUnlessAborted(it, stopWaiting.signal);
        if (r.done || ended()) {
          completed = r.done === true && !ended();
          break;
        }
        this.#queue.push({ frame: r.value, readyAt: this.#clock.now() });
        this.#pump();
        while (this.#queue.length >= LOCAL_QUEUE_FRAMES && !ended()) await this.#waitFor('space');
      }
      // Wait until everything queued was handed to `send`.
      while (this.#queue.length > 0 && !ended()) await this.#waitFor('drain');
    } finally {
      this.#stopHooks.delete(onStop);
      // The next call starts a new stream: a gap between two calls is not an underrun.
      this.#streaming = false;
      if (!completed) void Promise.resolve(it.return?.()).catch(() => {});
    }
    if (this.#sendError !== undefined) {
      const err = this.#sendError;
      throw new VoiceError(ErrorCode.Internal, 'pacer: send failed', { cause: err });
    }
    if (this.#signal.aborted) throw new VoiceError(ErrorCode.Aborted, 'aborted', { cause: this.#signal.reason });
    return { framesSent: this.stats.framesSent - sentBefore, stopped: !completed };
  }

  #waitFor(what: 'space' | 'drain'): Promise<void> {
    return new Promise((resolve) => {
      if (what === 'space') this.#spaceWaiter = resolve;
      else this.#drainWaiter = resolve;
    });
  }

  #wakeWaiters(): void {
    this.#fireStopHooks();
    const s = this.#spaceWaiter;
    const d = this.#drainWaiter;
    this.#spaceWaiter = undefined;
    this.#drainWaiter = undefined;
    s?.();
    d?.();
  }

  /** Sends what is due now and arms the shared clock for the rest. */
  #pump(): void {
    const next = this.service(this.#clock.now());
    if (next < Infinity) this.#scheduler.wake(next);
  }

  /**
   * Sends every frame that fits the target lead at `now`; returns when the next frame is due
   * (Infinity when nothing is queued). Called by the shared scheduler.
   */
  service(now: number): number {
    if (this.#queue.length === 0) return Infinity;
    let sent = false;
    while (this.#queue.length > 0) {
      // The device's queue ran empty: the pre-buffer may go at once and the ramp starts again.
      if (this.#playEnd <= now) this.#rampFrom = now;
      const sendableAt = this.#nextSendAt();
      if (now < sendableAt - EARLY_MS) break;
      const item = this.#queue.shift() as QueuedFrame;
      // When should this frame have gone out? When the lead allowed it, or when it became
      // available if that was later.
      const dueAt = Math.max(sendableAt, item.readyAt);
      // What the device sees is timed at the send, not at the tick: one tick sends every device's
      // due frames, and a thread preempted (or a write slow) among them sends the rest later than
      // `now` shows. `now` still decides what is due, so the schedule is the same either way.
      const sentAt = this.#clock.now();
      const late = Math.max(0, sentAt - dueAt);
      if (this.#streaming && sentAt > this.#playEnd) this.stats.underruns++;
      if (late > this.#lateThresholdMs) this.stats.lateFrames++;
      if (late > this.stats.maxLateMs) this.stats.maxLateMs = late;
      try {
        this.#send(item.frame);
      } catch (err) {
        this.#sendError = err;
        this.#log?.warn({ err }, 'pacer send failed; stopping');
        this.#queue = [];
        this.#wakeWaiters();
        return Infinity;
      }
      sent = true;
      if (!Number.isNaN(this.#lastSentAt)) {
        this.stats.intervals++;
        if (sentAt - this.#lastSentAt > this.#frameMs + LATE_INTERVAL_MARGIN_MS) this.stats.lateIntervals++;
      }
      this.#lastSentAt = sentAt;
      this.#streaming = true;
      this.#playEnd = Math.max(this.#playEnd, now) + this.#frameMs;
      this.stats.framesSent++;
    }
    if (sent) {
      if (this.#queue.length < LOCAL_QUEUE_FRAMES) {
        const s = this.#spaceWaiter;
        this.#spaceWaiter = undefined;
        s?.();
      }
      if (this.#queue.length === 0) {
        const d = this.#drainWaiter;
        this.#drainWaiter = undefined;
        d?.();
      }
    }
    if (this.#queue.length === 0) return Infinity;
    return this.#nextSendAt() - EARLY_MS;
  }

  /**
   * The earliest time the next frame fits the allowed lead: playEnd + frame - t ≤ the target, and
   * ≤ pre-buffer + LEAD_RAMP × (t - rampFrom) while the lead is being built up.
   */
  #nextSendAt(): number {
    const after = this.#playEnd + this.#frameMs;
    const steady = after - this.#targetLeadMs;
    const ramp = (after - this.#preLeadMs + LEAD_RAMP * this.#rampFrom) / (1 + LEAD_RAMP);
    return Math.max(steady, ramp);
  }

  #dispose(): void {
    this.stop();
    this.#scheduler.remove(this);
  }
}

/** Creates a pacer for one downlink. Dispose by aborting `signal`. */
export function createPacer(opts: PacerOptions): Pacer {
  return new PacerImpl(opts);
}
