/**
 * @module The media engine without workers (`media.workers: 0`): the same `MediaCore` in the
 * calling thread. For tiny deployments, debugging, and as the reference the worker path is
 * tested against.
 */
import type { Logger } from '../../core/logger.ts';
import { throwIfAborted } from '../../core/abort.ts';
import { encodeChunks } from './encode-chunks.ts';
import { MediaCore, type CoreSession } from './media-core.ts';
import {
  FRAME_MS,
  UPLINK_SAMPLE_RATE,
  type DownlinkFormat,
  type MediaEngine,
  type MediaThreadConfig,
  type SessionMedia,
  type SessionMediaOptions,
  type UplinkResult,
} from './media.ts';
import type { EspeakVoice } from '../tts/espeak-wasm.ts';

class InProcessSession implements SessionMedia {
  readonly uplinkSampleRate = UPLINK_SAMPLE_RATE;
  readonly uplinkFrameSamples = (UPLINK_SAMPLE_RATE / 1000) * FRAME_MS;
  readonly #core: CoreSession;
  readonly #onClose: () => void;
  #streams = 0;
  /** Uplink packets and VAD resets in call order, as the worker's per-session chain keeps them. */
  #chain: Promise<unknown> = Promise.resolve();

  constructor(core: CoreSession, onClose: () => void) {
    this.#core = core;
    this.#onClose = onClose;
  }

  uplink(packet: Uint8Array): Promise<UplinkResult> {
    const run = this.#chain.then(() => this.#core.uplink(packet));
    this.#chain = run.catch(() => undefined);
    return run;
  }

  resetVad(): void {
    this.#chain = this.#chain.then(() => this.#core.resetVad());
  }

  encode(
    audio: AsyncIterable<Int16Array | Uint8Array>,
    signal: AbortSignal,
    format?: DownlinkFormat,
  ): AsyncIterable<Buffer> {
    const stream = ++this.#streams;
    return encodeChunks(audio, signal, format, (chunk, final) => this.#core.encodeChunk(stream, chunk, final, format));
  }

  async *speak(text: string, signal: AbortSignal, _urgent?: boolean, voice?: EspeakVoice): AsyncGenerator<Buffer> {
    throwIfAborted(signal);
    const packets: Buffer[] = [];
    this.#core.speak(text, (p) => packets.push(...p), voice);
    yield* packets;
  }

  holdPlayback(): void {
    // Synthesis here is synchronous and unscheduled: nothing to hold.
  }

  onLost(): void {
    // Nothing can be lost: the state lives in this thread.
  }

  close(): void {
    this.#core.close();
    this.#onClose();
  }
}

export async function createInProcessEngine(config: MediaThreadConfig, log: Logger): Promise<MediaEngine> {
  const core = new MediaCore(config, log);
  await core.load();
  await core.warmUp();
  let sessions = 0;
  return {
    async open(opts: SessionMediaOptions, sessionLog: Logger): Promise<SessionMedia> {
      const s = new InProcessSession(await core.openSession(opts, sessionLog), () => sessions--);
      sessions++;
      return s;
    },
    stats: () => ({ workers: 0, sessions, queueDepth: 0, workerRestarts: 0 }),
    close: () => core.close(),
  };
}
