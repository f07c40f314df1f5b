/**
 * @module The media work itself, for one thread: the VAD model and the espeak engine are loaded
 * once per thread; each session gets its own decoder, encoder, VAD stream and framers. Used by
 * the worker thread (`media-worker.ts`) and by the in-process engine alike.
 */
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import { createOpusCodec, type OpusCodec, type OpusSampleRate } from '../opus/codec.ts';
import { PcmFramer } from '../pcm/pcm.ts';
import { Resampler } from '../pcm/resample.ts';
import {
  localHelperSource,
  startNativeEspeak,
  type EspeakHelperSource,
  type NativeEspeakEngine,
} from '../tts/espeak-native.ts';
import {
  checkEspeakVoice,
  espeakText,
  loadEspeakEngine,
  type EspeakEngine,
  type EspeakVoice,
} from '../tts/espeak-wasm.ts';
import { createVadModel, type VadModel, type VadStream } from '../vad/vad.ts';
import { createDownlinkInput, type DownlinkInput } from './downlink-input.ts';
import {
  FRAME_MS,
  UPLINK_SAMPLE_RATE,
  type DownlinkFormat,
  type EspeakEngineChoice,
  type MediaThreadConfig,
  type SessionMediaOptions,
  type UplinkResult,
} from './media.ts';

/** DTX packets during silence are this small; they carry no speech. */
const DTX_MAX_BYTES = 2;

/**
 * espeak-ng's voice has little energy near 11 kHz, so half the resampler's default kernel is
 * transparent here (-47 dB from the full one) and costs a third less; resampling was a quarter
 * of a sentence's CPU.
 */
const TTS_RESAMPLE_ZERO_CROSSINGS = 8;

/**
 * Spoken (and discarded) at load: the engine is asm.js-style JavaScript, and its first syntheses
 * run 10-30× slower (60-250 ms for a short sentence) until V8 has optimised it. Warming up before
 * the worker reports ready keeps those slow calls away from the first devices' turns.
 */
const WARM_UP = [
  'Hello there.',
  'The quick brown fox jumps over the lazy dog, twice.',
  'It is sunny today, with a light breeze from the west.',
];
/**
 * A fixed count, not a time budget: espeak-ng carries a little state from one synthesis to the
 * next, so every thread must have spoken the same warm-up for their outputs to be identical.
 * About 1.5 s of CPU.
 */
const WARM_UP_CALLS = 30;

export class MediaCore {
  readonly #config: MediaThreadConfig;
  readonly #log: Logger;
  #vadModel: VadModel | undefined;
  #espeak: EspeakEngine | undefined;
  #native: NativeEspeakEngine | undefined;
  readonly #helpers: EspeakHelperSource | undefined;

  /**
   * `espeakHelpers`: where the native espeak-ng engine gets its helper processes. A worker asks
   * the main thread (which owns and reaps them); without it this thread spawns its own.
   */
  constructor(config: MediaThreadConfig, log: Logger, opts: { espeakHelpers?: EspeakHelperSource } = {}) {
    this.#config = config;
    this.#log = log;
    this.#helpers = opts.espeakHelpers;
  }

  /** Loads the VAD model and the TTS engine; an unknown voice is a configuration error. */
  async load(): Promise<void> {
    this.#vadModel = await createVadModel({ provider: this.#config.vadProvider, log: this.#log });
    this.#espeak = await this.#loadEspeak(this.#config.espeakEngine ?? 'auto');
    checkEspeakVoice(this.#espeak, this.#config.espeak.voice);
  }

  /** The native helper when it is built (`auto`) or required (`native`), else the WASM build. */
  async #loadEspeak(choice: EspeakEngineChoice): Promise<EspeakEngine> {
    if (choice !== 'wasm') {
      try {
        this.#native = await startNativeEspeak({
          helpers: this.#helpers ?? localHelperSource({ log: this.#log }),
          log: this.#log,
        });
        this.#log.debug('espeak-ng: native helper started');
        return this.#native;
      } catch (err) {
        if (choice === 'native') throw err;
        this.#log.info(
          { reason: err instanceof Error ? err.message : String(err) },
          'espeak-ng: native helper unavailable, using the WebAssembly build',
        );
      }
    }
    return loadEspeakEngine();
  }

  /**
   * Runs the whole speak path (synthesis, resampling, Opus) until V8 has optimised it, on a
   * throwaway session.
   */
  async warmUp(): Promise<void> {
    const started = performance.now();
    // V8 compiles typed-array code on the assumption that no ArrayBuffer was ever detached, and
    // throws that code away the first time one is (its "detaching protector"). Media threads
    // transfer (detach) buffers for every packet, so the first real transfer used to undo this
    // warm-up: the next sentences took 80-170 ms instead of 10-25 ms. Detach one buffer first.
    const spent = new ArrayBuffer(8);
    structuredClone(spent, { transfer: [spent] });
    const s = await this.openSession({
      vad: { threshold: 0.5, minSilenceMs: 500 },
      downlinkSampleRate: 24000,
      complexity: 5,
    });
    try {
      for (let i = 0; i < WARM_UP_CALLS; i++) {
        s.speak(WARM_UP[i % WARM_UP.length] as string, () => {});
      }
    } finally {
      s.close();
    }
    this.#log.debug({ ms: Math.round(performance.now() - started) }, 'espeak-ng warmed up');
  }

  /** `log`: where the session's codecs warn (default the thread's logger). */
  async openSession(opts: SessionMediaOptions, log: Logger = this.#log): Promise<CoreSession> {
    if (!this.#vadModel || !this.#espeak) throw new VoiceError(ErrorCode.Internal, 'media core used before load');
    const decoder = await createOpusCodec({ sampleRate: UPLINK_SAMPLE_RATE, frameMs: FRAME_MS, log });
    const encoder = await createOpusCodec({
      sampleRate: opts.downlinkSampleRate,
      frameMs: FRAME_MS,
      complexity: opts.complexity,
      log,
    });
    const vad = this.#vadModel.createStream(opts.vad);
    return new CoreSession(decoder, encoder, vad, this.#espeak, this.#config, {
      downlinkSampleRate: opts.downlinkSampleRate,
      log,
    });
  }

  async close(): Promise<void> {
    const native = this.#native;
    this.#native = undefined;
    await native?.close();
    await this.#vadModel?.close();
  }
}

/** A downlink stream being encoded: its framer, and what turns its input into PCM at the downlink rate. */
interface DownlinkStream {
  framer: PcmFramer;
  input: DownlinkInput;
}

export class CoreSession {
  readonly decoder: OpusCodec;
  readonly encoder: OpusCodec;
  readonly #vad: VadStream;
  readonly #espeak: EspeakEngine;
  readonly #thread: MediaThreadConfig;
  readonly #downlinkRate: OpusSampleRate;
  readonly #log: Logger;
  /** One framer and input per downlink stream (each `encode` call), so streams never mix samples. */
  readonly #streams = new Map<number, DownlinkStream>();
  /** Voices other than the thread's that espeak-ng was found to know. */
  readonly #checkedVoices = new Set<string>();
  #closed = false;

  constructor(
    decoder: OpusCodec,
    encoder: OpusCodec,
    vad: VadStream,
    espeak: EspeakEngine,
    thread: MediaThreadConfig,
    downlink: { downlinkSampleRate: OpusSampleRate; log: Logger },
  ) {
    this.decoder = decoder;
    this.encoder = encoder;
    this.#vad = vad;
    this.#espeak = espeak;
    this.#thread = thread;
    this.#downlinkRate = downlink.downlinkSampleRate;
    this.#log = downlink.log;
  }

  async uplink(packet: Uint8Array): Promise<UplinkResult> {
    const decoded = this.decoder.decode(packet);
    // A corrupt packet still took 60 ms of the device's time: count it as silence so the VAD's
    // silence timer keeps running. DTX packets are silence by definition.
    const pcm = decoded && packet.byteLength > DTX_MAX_BYTES ? decoded : new Int16Array(this.decoder.frameSamples);
    const events = this.#closed ? [] : await this.#vad.push(pcm);
    return { pcm, events, corrupt: decoded === null };
  }

  resetVad(): void {
    this.#vad.reset();
  }

  /**
   * Frames and encodes one chunk of downlink stream `stream`, given as bytes in `format` (PCM at
   * the downlink rate when unset; see `DownlinkFormat`); `final` pads and ends the stream. Input
   * that cannot be read throws `bad_input` and drops the stream.
   */
  encodeChunk(
    stream: number,
    chunk: Uint8Array | null,
    final: boolean,
    format: DownlinkFormat = { container: 'pcm', sampleRate: this.#downlinkRate },
  ): Buffer[] {
    let s = this.#streams.get(stream);
    const out: Buffer[] = [];
    try {
      if (!s) {
        s = {
          framer: new PcmFramer(this.encoder.frameSamples),
          input: createDownlinkInput(format, this.#downlinkRate, this.#log),
        };
        this.#streams.set(stream, s);
      }
      const { framer } = s;
      const sink = (pcm: Int16Array): void => {
        for (const f of framer.push(pcm)) out.push(this.encoder.encode(f));
      };
      if (chunk) s.input.push(chunk, sink);
      if (final) {
        s.input.end(sink);
        const last = framer.flush();
        if (last) out.push(this.encoder.encode(last));
        this.#dropStream(stream);
      }
    } catch (err) {
      this.#dropStream(stream);
      throw err;
    }
    return out;
  }

  #dropStream(stream: number): void {
    this.#streams.get(stream)?.input.close();
    this.#streams.delete(stream);
  }

  /** Synthesises `text` with the embedded TTS straight to Opus, handing packets out as they come. */
  speak(text: string, emit: (packets: Buffer[]) => void, voice?: EspeakVoice): void {
    this.startSpeech(text, Infinity, emit, voice);
  }

  /** The voice to speak with: the thread's, or one asked for (checked once, as the thread's was at load). */
  #voice(voice: EspeakVoice | undefined): EspeakVoice {
    if (!voice) return this.#thread.espeak;
    if (!this.#checkedVoices.has(voice.voice)) {
      checkEspeakVoice(this.#espeak, voice.voice);
      this.#checkedVoices.add(voice.voice);
    }
    return voice;
  }

  /**
   * Synthesises and resamples `text` at once (a few ms) and leaves most of the Opus encoding,
   * the larger share of the cost, to the job's `take`: a worker hands out each session's next few
   * frames by deadline instead of one whole sentence after another. The first `first` frames are
   * encoded and emitted while espeak-ng is still speaking, so they are not held up by the rest
   * of the sentence. Null when there is nothing to say.
   */
  startSpeech(text: string, first: number, emit: (packets: Buffer[]) => void, voice?: EspeakVoice): SpeechJob | null {
    const t = espeakText(text);
    if (!t) return null;
    const v = this.#voice(voice);
    const framer = new PcmFramer(this.encoder.frameSamples);
    const job = new SpeechJob(this.encoder);
    let owed = first;
    const add = (frames: Int16Array[]): void => {
      job.add(frames);
      if (owed <= 0) return;
      const p = job.take(owed);
      owed -= p.length;
      if (p.length > 0) emit(p);
    };
    const espeak = this.#espeak;
    if (espeak.resamples) {
      // The native helper resamples as it goes, at a tenth of the JavaScript resampler's cost.
      espeak.synthesize(t, v, (chunk) => add(framer.push(chunk)), this.encoder.sampleRate);
      const last = framer.flush();
      add(last ? [last] : []);
      return job;
    }
    const resampler = new Resampler(espeak.sampleRate, this.encoder.sampleRate, TTS_RESAMPLE_ZERO_CROSSINGS);
    espeak.synthesize(t, v, (chunk) => add(framer.push(resampler.push(chunk))));
    const tail = framer.push(resampler.flush());
    const last = framer.flush();
    add(last ? [...tail, last] : tail);
    return job;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#vad.close();
    this.decoder.close();
    this.encoder.close();
    for (const id of [...this.#streams.keys()]) this.#dropStream(id);
  }
}

/** One sentence's frames waiting to be encoded, in order, by the session's (stateful) encoder. */
export class SpeechJob {
  readonly #frames: Int16Array[] = [];
  readonly #encoder: OpusCodec;
  #next = 0;

  constructor(encoder: OpusCodec) {
    this.#encoder = encoder;
  }

  add(frames: readonly Int16Array[]): void {
    for (const f of frames) this.#frames.push(f);
  }

  /** Every frame added so far has been taken. */
  get finished(): boolean {
    return this.#next >= this.#frames.length;
  }

  /** Encodes and returns up to `max` next frames. */
  take(max: number): Buffer[] {
    const end = Math.min(this.#frames.length, this.#next + max);
    const out: Buffer[] = [];
    for (; this.#next < end; this.#next++) out.push(this.#encoder.encode(this.#frames[this.#next] as Int16Array));
    return out;
  }
}
