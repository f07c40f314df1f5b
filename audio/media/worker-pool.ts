/**
 * @module The media engine on worker threads: a pool sized to the cores, each session pinned to
 * the least-loaded worker for its whole life (its codec and VAD state live there), PCM and
 * packets transferred, not copied. A worker that dies fails its sessions' pending requests and
 * tells each of its sessions (which end with a close code), and is replaced; the other workers'
 * sessions never notice. `recycle()` replaces a worker gracefully: its sessions move to the new
 * worker with fresh codec and VAD state (safe between turns).
 */
import type { Worker } from 'node:worker_threads';
import { startModuleWorker } from '../../core/start-worker.ts';
import { AsyncQueue } from '../../core/async-queue.ts';
import { throwIfAborted } from '../../core/abort.ts';
import { ErrorCode, VoiceError, toVoiceError } from '../../core/errors.ts';
import { spawnEspeakHelper, type EspeakHelperProcess } from '../tts/espeak-native.ts';
import type { Logger } from '../../core/logger.ts';
import { FRAME_MS, UPLINK_SAMPLE_RATE, type MediaEngine, type MediaEngineStats, type MediaThreadConfig, type SessionMedia, type SessionMediaOptions, type UplinkResult } from './media.ts';
import { encodeChunks } from './encode-chunks.ts';
import { unpackPackets, type FromWorker, type ToWorker, type WorkerData } from './worker-protocol.ts';

/** A worker that cannot even load is retried after this long, not in a tight loop. */
const RESTART_DELAY_MS = 1000;
/** A worker asked to exit gets this long (it finishes the synthesis it is in) before it is terminated. */
const EXIT_GRACE_MS = 3000;
/** A recycled worker gets this long to answer what is in flight before it is terminated. */
const RECYCLE_GRACE_MS = 2000;

type Pending = {
  onMessage(m: FromWorker): void;
  onLost(err: VoiceError): void;
};

class WorkerHandle {
  readonly worker: Worker;
  readonly ready: Promise<void>;
  readonly pending = new Map<number, Pending>();
  readonly sessions = new Set<RemoteSession>();
  /** Set when the exit was asked for (recycle, close): not a crash. */
  retiring = false;
  alive = true;
  /** Set once the worker has loaded: one that dies before that is replaced only after a delay. */
  wasReady = false;
  readonly #log: Logger;
  readonly #nice: number;
  /** The worker's espeak-ng helper: spawned here so that this thread owns and reaps it. */
  #helper: Promise<EspeakHelperProcess | undefined> = Promise.resolve(undefined);

  constructor(index: number, data: WorkerData, log: Logger, onExit: (h: WorkerHandle, err: VoiceError) => void) {
    this.#log = log;
    this.#nice = data.nice;
    this.worker = startModuleWorker(import.meta.url, './media-worker', { workerData: data, name: `media-${index}` });
    this.ready = new Promise<void>((resolve, reject) => {
      const first = (m: FromWorker): void => {
        if (m.op === 'ready') {
          this.wasReady = true;
          resolve();
        }
        else if (m.op === 'loadFailed') reject(new VoiceError(m.code as ErrorCode, m.message));
      };
      this.worker.on('message', (m: FromWorker) => {
        if (m.op === 'ready' || m.op === 'loadFailed') first(m);
        else this.#dispatch(m);
      });
      this.worker.on('error', (err) => {
        this.#log.error({ err: err.message }, 'media worker failed');
        reject(err);
      });
      this.worker.on('exit', (code) => {
        this.alive = false;
        void this.stopHelper();
        reject(new VoiceError(ErrorCode.Internal, `media worker exited (${code}) before it was ready`));
        if (this.retiring) return;
        onExit(this, new VoiceError(ErrorCode.Internal, `media worker exited with code ${code}`));
      });
    });
    this.ready.catch(() => {});
  }

  /** Stops the worker's helper (the worker exited, or asks for a new one). */
  async stopHelper(): Promise<void> {
    const h = await this.#helper;
    this.#helper = Promise.resolve(undefined);
    await h?.stop();
  }

  /** A (new) helper for the worker's espeak-ng engine; the previous one is stopped first. */
  #giveHelper(hid: number): void {
    const previous = this.#helper;
    const next = previous
      .then((h) => h?.stop())
      .then(() => spawnEspeakHelper({ nice: this.#nice, log: this.#log }));
    this.#helper = next.catch(() => undefined);
    next.then(
      (h) => {
        if (this.alive) this.send({ op: 'espeakHelper', hid, dir: h.dir });
        else void h.stop();
      },
      (err: unknown) => {
        const e = toVoiceError(err);
        this.send({ op: 'espeakHelper', hid, message: e.message, code: e.code });
      },
    );
  }

  #dispatch(m: FromWorker): void {
    if (m.op === 'espeakHelper') {
      this.#giveHelper(m.hid);
      return;
    }
    if (m.op === 'log') {
      const target = m.sid !== undefined ? [...this.sessions].find((s) => s.sid === m.sid)?.log : undefined;
      (target ?? this.#log)[m.level](m.obj, m.msg);
      return;
    }
    if (m.op === 'ready' || m.op === 'loadFailed') return;
    const p = this.pending.get(m.rid);
    if (!p) return;
    if (m.op === 'done' || m.op === 'uplink' || m.op === 'error' || (m.op === 'packets' && m.last)) this.pending.delete(m.rid);
    p.onMessage(m);
  }

  send(m: ToWorker, transfer: ArrayBuffer[] = []): void {
    if (this.alive) this.worker.postMessage(m, transfer);
  }

  /**
   * Ends the worker: asked first, so it exits between two pieces of work; terminated only if it
   * does not within `graceMs`. Terminating a worker that is inside the native Opus encoder makes
   * the addon's error throw fail, which aborts the whole process (seen at shutdown mid-answer).
   */
  async retire(graceMs = EXIT_GRACE_MS): Promise<void> {
    this.retiring = true;
    if (!this.alive) return this.stopHelper();
    const exited = new Promise<void>((resolve) => this.worker.once('exit', () => resolve()));
    this.send({ op: 'exit' });
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), graceMs);
    });
    const outcome = await Promise.race([exited, late]);
    clearTimeout(timer);
    if (outcome === 'late') {
      this.#log.warn({ graceMs }, 'media worker did not exit when asked; terminating it');
      await this.worker.terminate();
    }
    await this.stopHelper();
  }

  /** Fails everything in flight and tells every session: the state they had is gone. */
  lost(err: VoiceError): void {
    for (const p of this.pending.values()) p.onLost(err);
    this.pending.clear();
    for (const s of this.sessions) s.lose(err);
    this.sessions.clear();
  }
}

let nextRid = 1;
let nextSid = 1;

class RemoteSession implements SessionMedia {
  readonly uplinkSampleRate = UPLINK_SAMPLE_RATE;
  readonly uplinkFrameSamples = (UPLINK_SAMPLE_RATE / 1000) * FRAME_MS;
  readonly sid = nextSid++;
  readonly log: Logger;
  readonly #opts: SessionMediaOptions;
  #worker: WorkerHandle;
  #streams = 0;
  #lost: VoiceError | undefined;
  #lostCallbacks: Array<(err: VoiceError) => void> = [];
  #closed = false;

  constructor(worker: WorkerHandle, opts: SessionMediaOptions, log: Logger) {
    this.#worker = worker;
    this.#opts = opts;
    this.log = log;
  }

  get worker(): WorkerHandle {
    return this.#worker;
  }

  /** Opens this session's state on `worker` and makes it the session's home. */
  async openOn(worker: WorkerHandle): Promise<void> {
    await this.#request(worker, (rid) => ({ op: 'open', rid, sid: this.sid, opts: this.#opts }), (m, done) => {
      if (m.op === 'done') done.resolve(undefined);
    });
    const old = this.#worker;
    this.#worker = worker;
    if (old !== worker) {
      old.sessions.delete(this);
      old.send({ op: 'close', sid: this.sid });
    }
    worker.sessions.add(this);
  }

  uplink(packet: Uint8Array): Promise<UplinkResult> {
    // A tight copy (`new Uint8Array(x)` copies; Buffer#slice would not): the socket's buffer may
    // be a view of a larger one, and the copy is transferred.
    const copy = new Uint8Array(packet);
    return this.#request<UplinkResult>(
      this.#worker,
      (rid) => ({ op: 'uplink', rid, sid: this.sid, packet: copy }),
      (m, done) => {
        if (m.op === 'uplink') done.resolve({ pcm: m.pcm, events: m.events, corrupt: m.corrupt });
      },
      [copy.buffer],
    );
  }

  holdPlayback(held: boolean): void {
    this.#worker.send({ op: 'hold', sid: this.sid, held });
  }

  resetVad(): void {
    this.#worker.send({ op: 'resetVad', sid: this.sid });
  }

  encode(pcm: AsyncIterable<Int16Array>, signal: AbortSignal): AsyncIterable<Buffer> {
    const stream = ++this.#streams;
    return encodeChunks(pcm, signal, (chunk, final) => (final && !chunk && this.#closed ? [] : this.#encodeChunk(stream, chunk, final)));
  }

  #encodeChunk(stream: number, chunk: Int16Array | null, final: boolean): Promise<Buffer[]> {
    const pcm = chunk ? chunk.slice() : null;
    return this.#request<Buffer[]>(
      this.#worker,
      (rid) => ({ op: 'encode', rid, sid: this.sid, stream, pcm, final }),
      (m, done) => {
        if (m.op === 'packets') done.resolve(unpackPackets(m.packets));
      },
      pcm ? [pcm.buffer as ArrayBuffer] : [],
    );
  }

  async *speak(text: string, signal: AbortSignal, urgent = false): AsyncGenerator<Buffer> {
    throwIfAborted(signal);
    const queue = new AsyncQueue<Buffer>();
    let rid = 0;
    const done = this.#request<undefined>(
      this.#worker,
      (r) => {
        rid = r;
        return { op: 'speak', rid: r, sid: this.sid, text, urgent };
      },
      (m, d) => {
        if (m.op === 'packets') for (const p of unpackPackets(m.packets)) queue.push(p);
        else if (m.op === 'done') d.resolve(undefined);
      },
    );
    done.then(
      () => queue.close(),
      (err: unknown) => queue.fail(err),
    );
    let finished = false;
    try {
      for await (const p of queue) {
        throwIfAborted(signal);
        yield p;
      }
      finished = true;
    } finally {
      // Stopped early (barge-in): a synthesis still waiting in the worker is dropped.
      if (!finished && this.#worker.pending.has(rid)) this.#worker.send({ op: 'cancel', rid });
    }
  }

  onLost(cb: (err: VoiceError) => void): void {
    if (this.#lost) cb(this.#lost);
    else this.#lostCallbacks.push(cb);
  }

  lose(err: VoiceError): void {
    if (this.#lost || this.#closed) return;
    this.#lost = err;
    for (const cb of this.#lostCallbacks.splice(0)) cb(err);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#worker.sessions.delete(this);
    this.#worker.send({ op: 'close', sid: this.sid });
  }

  #request<T>(
    worker: WorkerHandle,
    make: (rid: number) => ToWorker,
    onMessage: (m: FromWorker, done: { resolve: (v: T) => void }) => void,
    transfer: ArrayBuffer[] = [],
  ): Promise<T> {
    if (this.#lost) return Promise.reject(this.#lost);
    if (this.#closed) return Promise.reject(new VoiceError(ErrorCode.Aborted, 'media session closed'));
    if (!worker.alive) return Promise.reject(new VoiceError(ErrorCode.Internal, 'media worker is gone'));
    return new Promise<T>((resolve, reject) => {
      const rid = nextRid++;
      worker.pending.set(rid, {
        onMessage: (m) => {
          if (m.op === 'error') reject(new VoiceError(m.code as ErrorCode, m.message));
          else onMessage(m, { resolve });
        },
        onLost: reject,
      });
      worker.send(make(rid), transfer);
    });
  }
}

export interface WorkerPool extends MediaEngine {
  /** Replaces worker `index` with a fresh one; its sessions move with fresh codec and VAD state. */
  recycle(index: number): Promise<void>;
  /** Tests: makes worker `index` crash. */
  crashForTest(index: number): void;
  /** Which worker a session lives on (tests, diagnostics). */
  workerOf(media: SessionMedia): number;
}

export interface WorkerPoolOptions {
  /** Scheduling niceness of each worker thread (see `audio.workerNice`). */
  nice: number;
}

export async function createWorkerPool(size: number, config: MediaThreadConfig, log: Logger, opts: WorkerPoolOptions = { nice: 0 }): Promise<WorkerPool> {
  const workers: WorkerHandle[] = [];
  let restarts = 0;
  let closed = false;

  const spawn = (index: number): WorkerHandle => {
    const h = new WorkerHandle(index, { config, index, nice: opts.nice }, log.child({ worker: index }), (dead, err) => {
      if (closed) return;
      log.error({ worker: index, sessions: dead.sessions.size, err: err.message }, 'media worker died; ending its sessions and starting a new one');
      dead.lost(err);
      restarts++;
      const t = setTimeout(() => {
        if (!closed && workers[index] === dead) workers[index] = spawn(index);
      }, dead.wasReady ? 0 : RESTART_DELAY_MS);
      t.unref();
    });
    return h;
  };

  for (let i = 0; i < size; i++) workers.push(spawn(i));
  try {
    await Promise.all(workers.map((w) => w.ready));
  } catch (err) {
    closed = true;
    await Promise.allSettled(workers.map((w) => w.retire()));
    throw err;
  }
  log.info({ workers: size }, 'media workers ready');

  const pickWorker = (): WorkerHandle => {
    let best: WorkerHandle | undefined;
    for (const w of workers) if (w.alive && (!best || w.sessions.size < best.sessions.size)) best = w;
    if (!best) throw new VoiceError(ErrorCode.ProviderUnavailable, 'no media worker available');
    return best;
  };

  return {
    async open(opts: SessionMediaOptions, sessionLog: Logger): Promise<SessionMedia> {
      if (closed) throw new VoiceError(ErrorCode.ProviderUnavailable, 'media engine closed');
      const w = pickWorker();
      const s = new RemoteSession(w, opts, sessionLog);
      // Counted on its worker from the choice, not once open: sessions opening together (devices
      // reconnecting after a restart) spread over the workers instead of all picking the same one.
      w.sessions.add(s);
      try {
        await w.ready;
        await s.openOn(w);
      } catch (err) {
        w.sessions.delete(s);
        throw err;
      }
      return s;
    },
    stats(): MediaEngineStats {
      let sessions = 0;
      let queueDepth = 0;
      for (const w of workers) {
        sessions += w.sessions.size;
        queueDepth += w.pending.size;
      }
      return { workers: workers.filter((w) => w.alive).length, sessions, queueDepth, workerRestarts: restarts };
    },
    async recycle(index: number): Promise<void> {
      const old = workers[index];
      if (!old) throw new RangeError(`no media worker ${index}`);
      const fresh = spawn(index);
      await fresh.ready;
      workers[index] = fresh;
      old.retiring = true;
      await Promise.all([...old.sessions].map((s) => s.openOn(fresh).catch((err: unknown) => s.lose(err instanceof VoiceError ? err : new VoiceError(ErrorCode.Internal, String(err))))));
      const deadline = Date.now() + RECYCLE_GRACE_MS;
      while (old.pending.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      old.lost(new VoiceError(ErrorCode.Internal, 'media worker recycled'));
      await old.retire();
      log.info({ worker: index }, 'media worker recycled');
    },
    crashForTest(index: number): void {
      workers[index]?.send({ op: 'crash' });
    },
    workerOf(media: SessionMedia): number {
      return media instanceof RemoteSession ? workers.indexOf(media.worker) : -1;
    },
    async close(): Promise<void> {
      closed = true;
      await Promise.allSettled(
        workers.map((w) => {
          w.lost(new VoiceError(ErrorCode.Aborted, 'media engine closed'));
          return w.retire();
        }),
      );
    },
  };
}
