/**
 * @module Offline ASR with Debian's pocketsphinx 0.8 (`pocketsphinx_continuous`), kept running as
 * one long-lived process shared by every utterance (model load costs 0.15-0.45 s). Batch only: the
 * engine used when the streaming helper is not built, or chosen with `engine: continuous` (asr.ts).
 *
 * How utterances are delimited in one continuous stream: each is written as
 *   [lead 0.3 s][the utterance][trail 1.2 s]  (+ with the language model: [sentinel 0.3 s][1.2 s])
 * where the padding is very quiet noise (pure digital silence throws the recogniser's noise
 * estimate off and garbles the next words). pocketsphinx segments with its own VAD and, with
 * `-time yes`, prints each segment's words with their stream times, so a segment is attributed
 * to the utterance whose span contains its start.
 * When is an utterance complete? With the language model, the loud-noise sentinel produces a
 * segment of its own (`<s> … </s>` with no words): its arrival ends the result. With a JSGF
 * grammar, a segment that matches no phrase prints nothing, so no sentinel can work; the result
 * ends when stdout has been quiet for a while after the audio was written (the grammar search
 * runs at ~0.015 × real time, so the wait is short).
 *
 * `pocketsphinx_continuous -infile /dev/stdin` cannot open a Node socketpair, so it runs as
 * `sh -c 'cat | exec pocketsphinx_continuous …'` in its own process group (killed as a group).
 */
import { createInterface } from 'node:readline';
import { throwIfAborted } from '../../core/abort.ts';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import { spawnManaged, writeWithBackpressure, type ManagedChild } from '../../audio/process/child-process.ts';
import { int16ToBuffer } from '../../audio/pcm/pcm.ts';
import { resample } from '../../audio/pcm/resample.ts';
import type { Asr } from '../../audio/asr/asr.ts';
import { modelArgs } from './model-args.ts';
import type { PocketsphinxAsrOptions } from './options.ts';

const RATE = 16000;
const LEAD_S = 0.3;
const TRAIL_S = 1.2;
const SENTINEL_S = 0.3;
const AFTER_SENTINEL_S = 1.2;
/** JSGF mode: stdout quiet this long (ms, plus 5 % of the audio) after writing ends the result. */
const QUIET_MS = 250;
/** pocketsphinx opens a segment up to ~0.5 s before the sound that triggered it. */
const SENTINEL_SLACK_S = 0.7;
/** Quiet padding: ±24 LSB (about -62 dBFS) of noise. */
const PAD_AMPLITUDE = 24;
const SENTINEL_AMPLITUDE = 9000;
const RESTART_BACKOFF_MS = [0, 250, 1000, 3000];

interface Segment {
  text: string;
  startS: number;
}

interface Job {
  pcm: Int16Array;
  signal: AbortSignal;
  resolve: (text: string) => void;
  reject: (err: unknown) => void;
  /** Stream span (s) of the utterance's lead+audio+trail, and where the sentinel starts. */
  startS?: number;
  sentinelS?: number;
  texts: string[];
  timer?: NodeJS.Timeout;
  quietTimer?: NodeJS.Timeout;
  quietMs?: number;
  written?: boolean;
  retried?: boolean;
  done: boolean;
}

/** Deterministic noise so test runs are repeatable (the recogniser flips on LSB-level changes). */
function noise(samples: number, amplitude: number, seed: number): Int16Array {
  const out = new Int16Array(samples);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < samples; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = ((x >>> 0) % (2 * amplitude + 1)) - amplitude;
  }
  return out;
}

const LEAD = noise(Math.round(LEAD_S * RATE), PAD_AMPLITUDE, 1);
const TRAIL = noise(Math.round(TRAIL_S * RATE), PAD_AMPLITUDE, 2);
const SENTINEL = noise(Math.round(SENTINEL_S * RATE), SENTINEL_AMPLITUDE, 3);
const AFTER_SENTINEL = noise(Math.round(AFTER_SENTINEL_S * RATE), PAD_AMPLITUDE, 4);

/** Words pocketsphinx puts in hypotheses that are not speech. */
function cleanHypothesis(line: string): string {
  return line
    .split(/\s+/)
    .filter((w) => w.length > 0 && !/^(<.*>|\[.*\]|\+\+.*\+\+)$/.test(w))
    .map((w) => w.replace(/\(\d+\)$/, ''))
    .join(' ');
}

export class PocketsphinxContinuousAsr implements Asr {
  readonly name = 'pocketsphinx';
  readonly #opts: PocketsphinxAsrOptions;
  readonly #log: Logger;
  readonly #args: string[];
  readonly #cleanup: () => Promise<void>;
  #child: ManagedChild | undefined;
  #queue: Job[] = [];
  #current: Job | undefined;
  /** Samples written to the current process (its stream clock). */
  #written = 0;
  #restarts = 0;
  #ready = false;
  #restartTimer: NodeJS.Timeout | undefined;
  #closed = false;
  readonly #lifetime = new AbortController();
  /** Segment being parsed from `-time yes` output; `reported` once its first word line was seen. */
  #seg = { text: '', reported: false };

  private constructor(opts: PocketsphinxAsrOptions, log: Logger, args: string[], cleanup: () => Promise<void>) {
    this.#opts = opts;
    this.#log = log;
    this.#args = args;
    this.#cleanup = cleanup;
  }

  /** Validates options, writes an inline grammar to a temp file and starts the process. */
  static async create(opts: PocketsphinxAsrOptions, log: Logger): Promise<PocketsphinxContinuousAsr> {
    const model = await modelArgs(opts);
    const asr = new PocketsphinxContinuousAsr(opts, log, ['-time', 'yes', ...model.args], model.cleanup);
    asr.#start();
    return asr;
  }

  #start(): void {
    const cmd = this.#opts.command;
    // "$@" keeps every argument (paths with spaces) intact. When the recogniser dies, `kill 0`
    // takes its process group (cat, sh) down too, so its death is seen at once, not at the next write.
    const script = `cat | { ${cmd.replace(/[^A-Za-z0-9_./-]/g, '')} -infile /dev/stdin "$@"; kill -KILL 0; }`;
    const child = spawnManaged('sh', ['-c', script, 'sh', ...this.#args], {
      processGroup: true,
      signal: this.#lifetime.signal,
      stderrBytes: 8192,
    });
    this.#child = child;
    this.#ready = false;
    this.#written = 0;
    // The log line printed after all models and the grammar loaded: only then does quiet stdout
    // mean "nothing more to recognise" rather than "still starting (or about to fail)".
    let errText = '';
    const onErr = (chunk: Buffer): void => {
      errText = (errText + chunk.toString('latin1')).slice(-200);
      if (!errText.includes('COMPILED ON')) return;
      child.proc.stderr.off('data', onErr);
      if (this.#child !== child) return;
      this.#ready = true;
      if (this.#current) this.#armQuiet(this.#current);
    };
    child.proc.stderr.on('data', onErr);
    this.#seg = { text: '', reported: false };
    const lines = createInterface({ input: child.proc.stdout });
    lines.on('line', (line) => this.#onLine(line));
    void child.exited.then((exit) => {
      if (this.#child !== child) return;
      this.#child = undefined;
      if (this.#closed) return;
      const stderr = child.stderrTail().split('\n').slice(-3).join(' | ');
      this.#log.warn(
        { code: exit.code, signal: exit.signal, error: exit.error?.message, stderr },
        'pocketsphinx exited; will restart',
      );
      const err = new VoiceError(
        exit.error ? ErrorCode.ProviderUnavailable : ErrorCode.ProcessFailed,
        `pocketsphinx exited (${exit.error?.message ?? exit.code ?? exit.signal}): ${stderr}`,
        { retryable: true },
      );
      const inFlight = this.#current;
      if (inFlight && !inFlight.retried && !exit.error) {
        // The audio is still here: give the utterance one more try on a fresh process.
        this.#current = undefined;
        clearTimeout(inFlight.timer);
        clearTimeout(inFlight.quietTimer);
        Object.assign(inFlight, { retried: true, texts: [], written: false });
        this.#queue.unshift(inFlight);
      } else if (inFlight) this.#finish(inFlight, err);
      // A process that cannot even start fails everything queued instead of looping.
      if (exit.error || this.#restarts >= RESTART_BACKOFF_MS.length) {
        for (const job of this.#queue.splice(0)) this.#finish(job, err);
        return;
      }
      this.#next();
    });
  }

  transcribe(pcm: Int16Array, opts: { signal: AbortSignal; sampleRate: number }): Promise<string> {
    throwIfAborted(opts.signal);
    if (this.#closed)
      return Promise.reject(new VoiceError(ErrorCode.ProviderUnavailable, 'pocketsphinx asr is closed'));
    const audio = opts.sampleRate === RATE ? pcm : resample(pcm, opts.sampleRate, RATE);
    return new Promise<string>((resolve, reject) => {
      const job: Job = { pcm: audio, signal: opts.signal, resolve, reject, texts: [], done: false };
      const onAbort = (): void => {
        this.#queue = this.#queue.filter((j) => j !== job);
        // An utterance already written keeps flowing through the recogniser; its text is dropped.
        this.#finish(job, new VoiceError(ErrorCode.Aborted, 'aborted', { cause: opts.signal.reason }));
      };
      opts.signal.addEventListener('abort', onAbort, { once: true });
      job.resolve = (t) => {
        opts.signal.removeEventListener('abort', onAbort);
        resolve(t);
      };
      job.reject = (e) => {
        opts.signal.removeEventListener('abort', onAbort);
        reject(e);
      };
      this.#queue.push(job);
      this.#next();
    });
  }

  /** Starts the next queued utterance when none is in flight (restarting the process if needed). */
  #next(): void {
    if (this.#closed || this.#current) return;
    const job = this.#queue[0];
    if (!job) return;
    if (!this.#child) {
      if (this.#restartTimer) return;
      const delay = RESTART_BACKOFF_MS[Math.min(this.#restarts, RESTART_BACKOFF_MS.length - 1)] ?? 0;
      this.#restarts++;
      if (delay > 0) {
        this.#restartTimer = setTimeout(() => {
          this.#restartTimer = undefined;
          if (!this.#closed && !this.#child) this.#start();
          this.#next();
        }, delay);
        return;
      }
      this.#start();
    }
    this.#queue.shift();
    this.#current = job;
    void this.#write(job);
  }

  get #sentinel(): boolean {
    return this.#opts.grammar === undefined;
  }

  async #write(job: Job): Promise<void> {
    const child = this.#child;
    if (!child) return;
    job.startS = this.#written / RATE;
    const parts = [LEAD, job.pcm, TRAIL];
    if (this.#sentinel) parts.push(SENTINEL, AFTER_SENTINEL);
    let total = 0;
    for (const p of parts) total += p.length;
    job.sentinelS = (this.#written + LEAD.length + job.pcm.length + TRAIL.length) / RATE;
    this.#written += total;
    const durationMs = (total * 1000) / RATE;
    job.quietMs = QUIET_MS + 0.05 * durationMs;
    const timeoutMs = this.#opts.timeoutMs ?? 3000 + 2 * durationMs;
    job.timer = setTimeout(() => {
      this.#log.warn({ timeoutMs, texts: job.texts.length }, 'pocketsphinx result timed out; using what arrived');
      this.#finish(job, undefined);
    }, timeoutMs);
    for (const part of parts) {
      if (!(await writeWithBackpressure(child.proc, int16ToBuffer(part), this.#lifetime.signal))) return;
    }
    job.written = true;
    this.#armQuiet(job);
  }

  #armQuiet(job: Job): void {
    if (job.done || !job.written || !this.#ready || this.#sentinel) return;
    clearTimeout(job.quietTimer);
    job.quietTimer = setTimeout(() => this.#finish(job, undefined), job.quietMs);
  }

  #onLine(raw: string): void {
    const line = raw.trim();
    if (this.#current) this.#armQuiet(this.#current);
    if (line.length === 0) return;
    const parts = line.split(/\s+/);
    const isWordLine = parts.length === 4 && parts.slice(1).every((p) => /^-?\d+(\.\d+)?$/.test(p));
    if (!isWordLine) {
      // A hypothesis line precedes its word lines.
      this.#seg = { text: cleanHypothesis(line), reported: false };
      return;
    }
    if (!this.#seg.reported) {
      this.#seg.reported = true;
      this.#onSegment({ text: this.#seg.text, startS: Number(parts[1]) });
    }
    // With the language model a segment ends with </s>; the next may print no hypothesis line.
    if (parts[0] === '</s>') this.#seg = { text: '', reported: false };
  }

  #onSegment(seg: Segment): void {
    const job = this.#current;
    if (!job || job.done || job.startS === undefined || job.sentinelS === undefined) return;
    if (seg.startS < job.startS - 0.05) return; // left over from an abandoned utterance
    if (this.#sentinel && seg.startS >= job.sentinelS - SENTINEL_SLACK_S) {
      this.#finish(job, undefined);
      return;
    }
    if (seg.text.length > 0) job.texts.push(seg.text);
  }

  #finish(job: Job, err: unknown): void {
    if (job.done) return;
    job.done = true;
    clearTimeout(job.timer);
    clearTimeout(job.quietTimer);
    if (err === undefined) this.#restarts = 0;
    if (err !== undefined) job.reject(err);
    else job.resolve(job.texts.join(' ').trim());
    if (this.#current === job) {
      // The next utterance can be written at once: segments of an aborted one start before the
      // new utterance's span and are ignored by time.
      this.#current = undefined;
      queueMicrotask(() => this.#next());
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#restartTimer);
    const err = new VoiceError(ErrorCode.Aborted, 'pocketsphinx asr closed');
    for (const job of this.#queue.splice(0)) this.#finish(job, err);
    if (this.#current) this.#finish(this.#current, err);
    const child = this.#child;
    this.#lifetime.abort();
    if (child) await child.exited;
    await this.#cleanup();
  }
}
