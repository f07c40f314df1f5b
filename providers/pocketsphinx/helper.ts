/**
 * @module The streaming helper process (`native/pocketsphinx-stream.c`, built by
 * `scripts/setup.sh` and in the image as `build/pocketsphinx-stream`): one per server, holding the
 * loaded models; it forks a decoder per utterance. This side starts it (again after a crash),
 * numbers the utterances, and bounds how many are decoded at once (`maxStreams`): an utterance
 * beyond that waits, its audio kept (at most 60 s), and starts when one ends. Frames coming back
 * are routed to their utterance by id; those of an utterance already over are dropped.
 */
import { accessSync, constants } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import { spawnManaged, type ManagedChild } from '../../audio/process/child-process.ts';
import { encodeFrame, FrameReader, MAX_AUDIO_SAMPLES, type InFrame } from './helper-frames.ts';

/** Where `scripts/setup.sh` and the image put the helper: `build/` at the project root (from sources or from `dist/`). */
const HELPER_CANDIDATES = ['../../build/pocketsphinx-stream', '../../../build/pocketsphinx-stream'].map((rel) =>
  fileURLToPath(new URL(rel, import.meta.url)),
);
/**
 * The decoders' niceness: below the media workers (`audio.workerNice`, 5) and the main thread, so
 * a burst of utterances takes only the CPU that the audio of every session leaves over. A decoder
 * needs 0.1-0.3 of a core while its utterance is spoken; pocketsphinx_continuous ran at 0, above
 * the media workers.
 */
const DECODER_NICE = 10;
/** Loading the models takes 0.3 s; this bounds a helper that never gets there. */
const START_TIMEOUT_MS = 15_000;
const RESTART_BACKOFF_MS = [0, 250, 1000, 3000];
/** Audio an utterance keeps while it waits for a decoder: 60 s at 16 kHz. */
const MAX_WAITING_SAMPLES = 60 * 16000;
/**
 * Frames written to the helper that it has not read yet (~8 minutes of audio): a helper that far
 * behind is hung, and is restarted rather than buffered for without end.
 */
const MAX_UNREAD_BYTES = 16 << 20;

/** The helper's path when it has been built, else undefined. */
export function streamHelperPath(): string | undefined {
  for (const p of HELPER_CANDIDATES) {
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      // not at this place
    }
  }
  return undefined;
}

/** What the helper says about one utterance; after `final` or `failed`, nothing more. */
export interface UtteranceListener {
  partial(text: string): void;
  final(text: string): void;
  failed(err: VoiceError): void;
}

/** One utterance's audio on its way to a decoder (16 kHz mono s16). */
export interface HelperUtterance {
  push(pcm: Int16Array): void;
  /** End of audio: the final comes to the listener. */
  finish(): void;
  /** Drops the utterance (its decoder is killed); the listener hears nothing more. */
  cancel(): void;
}

interface Utterance {
  readonly id: number;
  readonly listener: UtteranceListener;
  state: 'waiting' | 'open' | 'done';
  waiting: Int16Array[];
  waitingSamples: number;
  finished: boolean;
  droppedWarned: boolean;
}

export interface HelperOptions {
  path: string;
  /** pocketsphinx arguments (`-hmm`, `-dict`, `-lm`, `-jsgf`). */
  args: readonly string[];
  maxStreams: number;
  log: Logger;
}

export class PocketsphinxHelper {
  readonly #opts: HelperOptions;
  readonly #lifetime = new AbortController();
  #child: ManagedChild | undefined;
  #ready = false;
  #startTimer: NodeJS.Timeout | undefined;
  #restartTimer: NodeJS.Timeout | undefined;
  #restarts = 0;
  #closed = false;
  #nextId = 1;
  /** Utterances sent to the helper ('O' written), by id. */
  readonly #open = new Map<number, Utterance>();
  readonly #waiting: Utterance[] = [];

  constructor(opts: HelperOptions) {
    this.#opts = opts;
    this.#start();
  }

  /** Utterances being decoded now (tests, metrics). */
  get decoding(): number {
    return this.#open.size;
  }

  utterance(listener: UtteranceListener): HelperUtterance {
    const u: Utterance = {
      id: this.#nextId,
      listener,
      state: 'waiting',
      waiting: [],
      waitingSamples: 0,
      finished: false,
      droppedWarned: false,
    };
    this.#nextId = this.#nextId >= 0xffffffff ? 1 : this.#nextId + 1;
    if (this.#closed) {
      u.state = 'done';
      queueMicrotask(() =>
        listener.failed(new VoiceError(ErrorCode.ProviderUnavailable, 'pocketsphinx asr is closed')),
      );
    } else {
      this.#waiting.push(u);
      this.#pump();
    }
    return {
      push: (pcm) => this.#push(u, pcm),
      finish: () => this.#finish(u),
      cancel: () => this.#cancel(u),
    };
  }

  #push(u: Utterance, pcm: Int16Array): void {
    if (u.state === 'done' || u.finished || pcm.length === 0) return;
    if (u.state === 'open') {
      this.#sendAudio(u.id, pcm);
      return;
    }
    if (u.waitingSamples + pcm.length > MAX_WAITING_SAMPLES) {
      if (!u.droppedWarned)
        this.#opts.log.warn(
          { keptMs: MAX_WAITING_SAMPLES / 16 },
          'pocketsphinx: utterance waiting for a decoder is too long; audio dropped',
        );
      u.droppedWarned = true;
      return;
    }
    u.waiting.push(pcm);
    u.waitingSamples += pcm.length;
  }

  #finish(u: Utterance): void {
    if (u.state === 'done' || u.finished) return;
    u.finished = true;
    if (u.state === 'open') this.#write(encodeFrame('F', u.id));
  }

  #cancel(u: Utterance): void {
    if (u.state === 'done') return;
    if (u.state === 'open') {
      this.#write(encodeFrame('C', u.id));
      this.#open.delete(u.id);
    } else {
      const i = this.#waiting.indexOf(u);
      if (i >= 0) this.#waiting.splice(i, 1);
    }
    u.state = 'done';
    u.waiting = [];
    this.#pump();
  }

  #sendAudio(id: number, pcm: Int16Array): void {
    for (let i = 0; i < pcm.length; i += MAX_AUDIO_SAMPLES)
      this.#write(encodeFrame('A', id, pcm.subarray(i, i + MAX_AUDIO_SAMPLES)));
  }

  /** Writes in order; a helper that stops reading is killed past MAX_UNREAD_BYTES (see #onExit). */
  #write(frame: Buffer): void {
    const child = this.#child;
    const stdin = child?.proc.stdin;
    if (!child || !stdin || stdin.destroyed || stdin.writableEnded) return;
    if (stdin.writableLength + frame.length > MAX_UNREAD_BYTES) {
      this.#opts.log.error({ unreadBytes: stdin.writableLength }, 'pocketsphinx helper stopped reading; restarting it');
      child.kill();
      return;
    }
    stdin.write(frame);
  }

  /** Sends waiting utterances while decoders are free (and the helper is up). */
  #pump(): void {
    if (this.#closed || this.#waiting.length === 0) return;
    if (!this.#child) {
      this.#restart();
      return;
    }
    if (!this.#ready) return;
    while (this.#open.size < this.#opts.maxStreams) {
      const u = this.#waiting.shift();
      if (!u) return;
      u.state = 'open';
      this.#open.set(u.id, u);
      this.#write(encodeFrame('O', u.id));
      for (const pcm of u.waiting) this.#sendAudio(u.id, pcm);
      u.waiting = [];
      u.waitingSamples = 0;
      if (u.finished) this.#write(encodeFrame('F', u.id));
    }
  }

  #restart(): void {
    if (this.#restartTimer || this.#child) return;
    const delay = RESTART_BACKOFF_MS[Math.min(this.#restarts, RESTART_BACKOFF_MS.length - 1)] ?? 0;
    this.#restarts++;
    if (delay === 0) {
      this.#start();
      return;
    }
    this.#restartTimer = setTimeout(() => {
      this.#restartTimer = undefined;
      if (!this.#closed && !this.#child && this.#waiting.length > 0) this.#start();
    }, delay);
  }

  #start(): void {
    // Its own process group, as the espeak-ng helper's: Ctrl-C in a terminal (a signal to the
    // server's group) must not kill recognitions while the server drains; killing the group takes
    // its forked decoders with it.
    const child = spawnManaged(this.#opts.path, [String(DECODER_NICE), ...this.#opts.args], {
      signal: this.#lifetime.signal,
      stderrBytes: 8192,
      processGroup: true,
    });
    this.#child = child;
    this.#ready = false;
    const reader = new FrameReader();
    child.proc.stdout.on('data', (chunk: Buffer) => {
      if (this.#child !== child) return;
      let frames: InFrame[];
      try {
        frames = reader.push(chunk);
      } catch (err) {
        this.#opts.log.error({ err }, 'pocketsphinx helper sent a malformed frame; restarting it');
        child.kill();
        return;
      }
      for (const f of frames) this.#onFrame(f);
    });
    this.#startTimer = setTimeout(() => {
      this.#opts.log.error({ timeoutMs: START_TIMEOUT_MS }, 'pocketsphinx helper did not load its models in time');
      child.kill();
    }, START_TIMEOUT_MS);
    void child.exited.then((exit) => this.#onExit(child, exit.error, exit.code, exit.signal));
  }

  #onFrame(f: InFrame): void {
    if (f.kind === 'Y') {
      clearTimeout(this.#startTimer);
      this.#ready = true;
      this.#pump();
      return;
    }
    const u = this.#open.get(f.id);
    if (!u) return; // cancelled: its last frames may still be on the way
    if (f.kind === 'P') {
      u.listener.partial(f.text);
      return;
    }
    this.#open.delete(f.id);
    u.state = 'done';
    if (f.kind === 'R') {
      this.#restarts = 0;
      u.listener.final(f.text);
    } else {
      u.listener.failed(new VoiceError(ErrorCode.ProviderFailed, `pocketsphinx: ${f.text.slice(0, 200)}`));
    }
    this.#pump();
  }

  #onExit(child: ManagedChild, error: Error | undefined, code: number | null, signal: string | null): void {
    if (this.#child !== child) return;
    clearTimeout(this.#startTimer);
    const wasReady = this.#ready;
    this.#child = undefined;
    this.#ready = false;
    if (this.#closed) return;
    const stderr = child.stderrTail().split('\n').slice(-3).join(' | ');
    this.#opts.log.warn({ code, signal, error: error?.message, stderr }, 'pocketsphinx helper exited');
    // Never ready: it cannot start or load its models (a missing program, a bad grammar or model
    // path), which another try will not mend. Died when ready: the utterances in flight are lost.
    const err = new VoiceError(
      error || !wasReady ? ErrorCode.ProviderUnavailable : ErrorCode.ProcessFailed,
      `pocketsphinx exited (${error?.message ?? code ?? signal}): ${stderr}`,
      { retryable: true },
    );
    const lost = [...this.#open.values()];
    this.#open.clear();
    // A helper that could not even load its models fails what waits instead of looping; the next
    // utterance tries again (after the backoff).
    const failWaiting = error !== undefined || !wasReady || this.#restarts >= RESTART_BACKOFF_MS.length;
    if (failWaiting) lost.push(...this.#waiting.splice(0));
    for (const u of lost) {
      u.state = 'done';
      u.waiting = [];
      u.listener.failed(err);
    }
    this.#pump();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#restartTimer);
    clearTimeout(this.#startTimer);
    const err = new VoiceError(ErrorCode.Aborted, 'pocketsphinx asr closed');
    const all = [...this.#open.values(), ...this.#waiting.splice(0)];
    this.#open.clear();
    for (const u of all) {
      u.state = 'done';
      u.listener.failed(err);
    }
    const child = this.#child;
    // The decoders die with the helper (PR_SET_PDEATHSIG).
    this.#lifetime.abort();
    if (child) await child.exited;
  }
}
