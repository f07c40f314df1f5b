/**
 * @module The media engine on worker threads: a pool sized to the cores, each session pinned to
 * the least-loaded worker for its whole life (its codec and VAD state live there), PCM and
 * packets transferred, not copied. A worker that dies fails its sessions' requests in flight and
 * tells each of its sessions (which end with a close code), and is replaced; the other workers'
 * sessions never notice. Each worker is one `core/worker-rpc.ts` endpoint.
 */
import { throwIfAborted } from '../../core/abort.ts';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import { createLogRateLimit } from '../../core/log-rate-limit.ts';
import type { ThreadLogRecord } from '../../core/thread-logger.ts';
import { startModuleWorker } from '../../core/start-worker.ts';
import { WorkerRpc, type WorkerObserver } from '../../core/worker-rpc.ts';
import { spawnEspeakHelper, type EspeakHelperProcess } from '../tts/espeak-native.ts';
import type { EspeakVoice } from '../tts/espeak-wasm.ts';
import {
  FRAME_MS,
  UPLINK_SAMPLE_RATE,
  type DownlinkFormat,
  type MediaEngine,
  type MediaEngineStats,
  type MediaThreadConfig,
  type SessionMedia,
  type SessionMediaOptions,
  type UplinkResult,
} from './media.ts';
import { encodeChunks } from './encode-chunks.ts';
import {
  SESSION_LOG_BINDING,
  unpackPackets,
  type MediaMainApi,
  type MediaWorkerApi,
  type WorkerData,
} from './worker-protocol.ts';

/** Records of a session already closed share this limit per worker (a flood's tail still in the worker). */
const CLOSED_SESSION_LINES = { perSecond: 1, burst: 5 };

/** One slot of the pool: the worker running there, the sessions pinned to it, its espeak-ng helper. */
class MediaWorker {
  readonly rpc: WorkerRpc<MediaWorkerApi, MediaMainApi>;
  readonly sessions = new Set<RemoteSession>();
  /** The logger of each open session by sid: its records from the worker go through it (and its limit). */
  readonly sessionLogs = new Map<number, Logger>();
  readonly #closedSessionLog: Logger;
  /** The worker's espeak-ng helper: spawned here so that this thread owns and reaps it. */
  #helper: Promise<EspeakHelperProcess | undefined> = Promise.resolve(undefined);
  /** Settles once the helper of the last worker that exited is stopped. */
  helperStopped: Promise<void> = Promise.resolve();

  constructor(
    data: WorkerData,
    log: Logger,
    onLost: (w: MediaWorker, err: VoiceError) => void,
    onWorker: WorkerObserver | undefined,
  ) {
    this.#closedSessionLog = createLogRateLimit(CLOSED_SESSION_LINES).wrap(log);
    this.rpc = new WorkerRpc<MediaWorkerApi, MediaMainApi>({
      label: `media worker ${data.index}`,
      start: () =>
        startModuleWorker(import.meta.url, './media-worker', { workerData: data, name: `media-${data.index}` }),
      log,
      logFor: (rec) => this.#logFor(rec),
      handlers: {
        // A (new) helper for the worker's espeak-ng engine; the previous one is stopped first.
        espeakHelper: () => {
          const next = this.#helper.then((h) => h?.stop()).then(() => spawnEspeakHelper({ nice: data.nice, log }));
          this.#helper = next.catch(() => undefined);
          return next.then((h) => h.dir);
        },
      },
      onLost: (err) => onLost(this, err),
      onExit: () => {
        this.helperStopped = this.#stopHelper();
      },
      ...(onWorker ? { onWorker } : {}),
    });
  }

  /** A session's record goes through the session's logger; the worker's own records through the worker's. */
  #logFor(rec: ThreadLogRecord): Logger | undefined {
    const sid = rec.bindings[SESSION_LOG_BINDING];
    if (typeof sid !== 'number') return undefined;
    return this.sessionLogs.get(sid) ?? this.#closedSessionLog;
  }

  async #stopHelper(): Promise<void> {
    const h = this.#helper;
    this.#helper = Promise.resolve(undefined);
    await (await h)?.stop();
  }

  /** Tells every session its media state is gone. */
  loseSessions(err: VoiceError): void {
    for (const s of this.sessions) s.lose(err);
    this.sessions.clear();
    this.sessionLogs.clear();
  }
}

let nextSid = 1;

class RemoteSession implements SessionMedia {
  readonly uplinkSampleRate = UPLINK_SAMPLE_RATE;
  readonly uplinkFrameSamples = (UPLINK_SAMPLE_RATE / 1000) * FRAME_MS;
  readonly sid = nextSid++;
  readonly #worker: MediaWorker;
  #streams = 0;
  #lost: VoiceError | undefined;
  #lostCallbacks: Array<(err: VoiceError) => void> = [];
  #closed = false;

  constructor(worker: MediaWorker, log: Logger) {
    this.#worker = worker;
    worker.sessionLogs.set(this.sid, log);
  }

  /** The worker to call, or why there is none for this session any more. */
  #rpc(): WorkerRpc<MediaWorkerApi, MediaMainApi> {
    if (this.#lost) throw this.#lost;
    if (this.#closed) throw new VoiceError(ErrorCode.Aborted, 'media session closed');
    return this.#worker.rpc;
  }

  async open(opts: SessionMediaOptions): Promise<void> {
    await this.#rpc().request('open', { sid: this.sid, opts });
  }

  async uplink(packet: Uint8Array): Promise<UplinkResult> {
    // A tight copy (`new Uint8Array(x)` copies; Buffer#slice would not): the socket's buffer may
    // be a view of a larger one, and the copy is transferred.
    const copy = new Uint8Array(packet);
    const r = await this.#rpc().request('uplink', { sid: this.sid, packet: copy }, { transfer: [copy.buffer] });
    return { pcm: r.pcm, events: r.events, corrupt: r.corrupt };
  }

  holdPlayback(held: boolean): void {
    this.#worker.rpc.notify('hold', { sid: this.sid, held });
  }

  resetVad(): void {
    this.#worker.rpc.notify('resetVad', { sid: this.sid });
  }

  encode(
    audio: AsyncIterable<Int16Array | Uint8Array>,
    signal: AbortSignal,
    format?: DownlinkFormat,
  ): AsyncIterable<Buffer> {
    const stream = ++this.#streams;
    return encodeChunks(audio, signal, format, (chunk, final) =>
      final && !chunk && this.#closed ? [] : this.#encodeChunk(stream, chunk, final, format),
    );
  }

  async #encodeChunk(
    stream: number,
    chunk: Uint8Array | null,
    final: boolean,
    format: DownlinkFormat | undefined,
  ): Promise<Buffer[]> {
    // A tight copy (`new Uint8Array(x)` copies; Buffer#slice would not), transferred: the caller's
    // chunk may be a view of a larger buffer it keeps.
    const bytes = chunk ? new Uint8Array(chunk) : null;
    const params = { sid: this.sid, stream, chunk: bytes, final, ...(format ? { format } : {}) };
    const packets = await this.#rpc().request('encode', params, {
      transfer: bytes ? [bytes.buffer as ArrayBuffer] : [],
    });
    return unpackPackets(packets);
  }

  // Stopped early (barge-in, abort): a synthesis still waiting in the worker is dropped.
  async *speak(text: string, signal: AbortSignal, urgent = false, voice?: EspeakVoice): AsyncGenerator<Buffer> {
    throwIfAborted(signal);
    const params = voice ? { sid: this.sid, text, urgent, voice } : { sid: this.sid, text, urgent };
    for await (const packets of this.#rpc().stream('speak', params, { signal })) yield* unpackPackets(packets);
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
    this.#worker.sessionLogs.delete(this.sid);
    if (!this.#lost) this.#worker.rpc.notify('close', { sid: this.sid });
  }
}

export interface WorkerPoolOptions {
  /** Scheduling niceness of each worker thread (see `audio.workerNice`). */
  nice: number;
  /** Sees each worker thread as it starts (labels `media worker <index>`). */
  onWorker?: WorkerObserver;
}

export async function createWorkerPool(
  size: number,
  config: MediaThreadConfig,
  log: Logger,
  opts: WorkerPoolOptions = { nice: 0 },
): Promise<MediaEngine> {
  const onLost = (w: MediaWorker, index: number, err: VoiceError): void => {
    log.error(
      { worker: index, sessions: w.sessions.size, err: err.message },
      'media worker died; ending its sessions and starting a new one',
    );
    w.loseSessions(err);
  };
  const workers = Array.from(
    { length: size },
    (_, index) =>
      new MediaWorker(
        { config, index, nice: opts.nice },
        log.child({ worker: index }),
        (dead, err) => onLost(dead, index, err),
        opts.onWorker,
      ),
  );
  let closed = false;
  const closeAll = async (err: VoiceError): Promise<void> => {
    closed = true;
    await Promise.allSettled(
      workers.map((w) => {
        w.loseSessions(err);
        return w.rpc.close(err).then(() => w.helperStopped);
      }),
    );
  };
  try {
    await Promise.all(workers.map((w) => w.rpc.start()));
  } catch (err) {
    await closeAll(new VoiceError(ErrorCode.Aborted, 'media engine failed to start'));
    throw err;
  }
  log.info({ workers: size }, 'media workers ready');

  const pickWorker = (): MediaWorker => {
    let best: MediaWorker | undefined;
    for (const w of workers) if (w.rpc.alive && (!best || w.sessions.size < best.sessions.size)) best = w;
    if (!best) throw new VoiceError(ErrorCode.ProviderUnavailable, 'no media worker available');
    return best;
  };

  return {
    async open(sessionOpts: SessionMediaOptions, sessionLog: Logger): Promise<SessionMedia> {
      if (closed) throw new VoiceError(ErrorCode.ProviderUnavailable, 'media engine closed');
      const w = pickWorker();
      const s = new RemoteSession(w, sessionLog);
      // Counted on its worker from the choice, not once open: sessions opening together (devices
      // reconnecting after a restart) spread over the workers instead of all picking the same one.
      // A worker still loading queues the request until it is ready.
      w.sessions.add(s);
      try {
        await s.open(sessionOpts);
      } catch (err) {
        w.sessions.delete(s);
        w.sessionLogs.delete(s.sid);
        throw err;
      }
      return s;
    },
    stats(): MediaEngineStats {
      let sessions = 0;
      let queueDepth = 0;
      let running = 0;
      let restarts = 0;
      for (const w of workers) {
        sessions += w.sessions.size;
        queueDepth += w.rpc.pending;
        restarts += w.rpc.restarts;
        if (w.rpc.ready) running++;
      }
      return { workers: running, sessions, queueDepth, workerRestarts: restarts };
    },
    close: () => closeAll(new VoiceError(ErrorCode.Aborted, 'media engine closed')),
  };
}
