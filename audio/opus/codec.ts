/**
 * @module Opus encoder/decoder for one direction of one session. Native `@discordjs/opus`
 * (libopus 1.3.1, built from source at install) when it loads, else the `opusscript` WASM build
 * (libopus 1.4, about 30 % slower). Packets interoperate bit-exactly between the two.
 * A corrupt packet never throws into the session: `decode` returns null and counts it.
 */
import { createRequire } from 'node:module';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import { bytesToInt16, int16ToBuffer } from '../pcm/pcm.ts';

export type OpusBackend = 'native' | 'wasm';
export type OpusSampleRate = 8000 | 12000 | 16000 | 24000 | 48000;
/** libopus application: `audio` (the default; CELT-only at 24 kHz with complexity ≤ 6) or `voip` (stays hybrid SILK+CELT). */
export type OpusApplication = 'audio' | 'voip';

export interface OpusCodecOptions {
  sampleRate: OpusSampleRate;
  /** Frame duration in ms; the xiaozhi protocol uses 60 both ways. */
  frameMs?: 60 | 20 | 40;
  /**
   * Encoder complexity 0..10; default 5 (libopus's own default is 9). The encoder is the CPU
   * cost of a session: at 24 kHz with `audio`, 5 codes CELT-only and is ~3.5× cheaper than 9
   * (bench: 82 vs 36 full-duplex Silero sessions per core).
   */
  complexity?: number;
  application?: OpusApplication;
  /** Target bitrate in bit/s; default libopus auto. */
  bitrate?: number;
  log?: Logger;
  /** Force a backend; `native` falls back to wasm (with a warning) when it cannot load. */
  prefer?: OpusBackend;
}

/** One encoder + decoder state for a fixed rate, mono. Not thread-safe; one per session direction. */
export interface OpusCodec {
  readonly backend: OpusBackend;
  readonly sampleRate: number;
  /** Samples per frame (e.g. 960 at 16 kHz / 60 ms). */
  readonly frameSamples: number;
  /** Encodes exactly `frameSamples` samples into one packet. */
  encode(pcm: Int16Array): Buffer;
  /** Decodes one packet; null means the packet was corrupt (dropped and counted). */
  decode(packet: Uint8Array): Int16Array | null;
  /** Packets that failed to decode since creation. */
  readonly corruptFrames: number;
  /** Frees the codec state (WASM memory is not garbage-collected). Idempotent. */
  close(): void;
}

/** See `OpusCodecOptions.complexity`. */
export const DEFAULT_COMPLEXITY = 5;

// opus_defines.h request numbers
const OPUS_SET_APPLICATION = 4000;
const OPUS_SET_COMPLEXITY = 4010;
const OPUS_APPLICATION_VOIP = 2048;
const OPUS_APPLICATION_AUDIO = 2049;

interface NativeOpus {
  encode(buf: Buffer): Buffer;
  decode(buf: Buffer): Buffer;
  applyEncoderCTL(ctl: number, value: number): void;
  setBitrate(bitrate: number): void;
}
type NativeCtor = new (rate: number, channels: number) => NativeOpus;

interface WasmOpus {
  encode(buf: Buffer, frameSize: number): Buffer;
  decode(buf: Buffer): Buffer;
  encoderCTL(ctl: number, arg: number): void;
  setBitrate(bitrate: number): void;
  delete(): void;
}
type WasmCtor = new (rate: number, channels: number, application: number) => WasmOpus;

const require = createRequire(import.meta.url);
let nativeCtor: NativeCtor | null | undefined;
let nativeLoadError: unknown;
let wasmCtor: WasmCtor | undefined;
const announced = new Set<OpusBackend>();

function loadNative(): NativeCtor | null {
  if (nativeCtor !== undefined) return nativeCtor;
  try {
    const mod = require('@discordjs/opus') as { OpusEncoder: NativeCtor };
    nativeCtor = mod.OpusEncoder;
  } catch (err) {
    nativeLoadError = err;
    nativeCtor = null;
  }
  return nativeCtor;
}

function loadWasm(): WasmCtor {
  wasmCtor ??= require('opusscript') as WasmCtor;
  return wasmCtor;
}

/** Which backend `createOpusCodec` would pick with no preference (loads the native module once). */
export function availableOpusBackend(): OpusBackend {
  return loadNative() ? 'native' : 'wasm';
}

function checkOptions(opts: OpusCodecOptions): { frameSamples: number; complexity: number | undefined } {
  const rates: readonly number[] = [8000, 12000, 16000, 24000, 48000];
  if (!rates.includes(opts.sampleRate))
    throw new VoiceError(ErrorCode.ConfigInvalid, `opus: unsupported sample rate ${opts.sampleRate}`);
  const frameMs = opts.frameMs ?? 60;
  if (![20, 40, 60].includes(frameMs))
    throw new VoiceError(ErrorCode.ConfigInvalid, `opus: unsupported frame duration ${frameMs} ms`);
  const c = opts.complexity;
  if (c !== undefined && !(Number.isInteger(c) && c >= 0 && c <= 10)) {
    throw new VoiceError(ErrorCode.ConfigInvalid, `opus: complexity must be an integer 0..10, got ${c}`);
  }
  return { frameSamples: (opts.sampleRate / 1000) * frameMs, complexity: c ?? DEFAULT_COMPLEXITY };
}

/**
 * Creates a mono codec at `sampleRate` with `frameMs` frames (default 60). Async so a future
 * backend can load lazily; today both backends load synchronously on first use.
 */
export async function createOpusCodec(opts: OpusCodecOptions): Promise<OpusCodec> {
  return createOpusCodecSync(opts);
}

/**
 * `createOpusCodec` in the same step: for a decoder made in the middle of a synchronous
 * request (a media worker's Ogg/Opus input), with the backend already loaded by the session's codecs.
 */
export function createOpusCodecSync(opts: OpusCodecOptions): OpusCodec {
  const { frameSamples, complexity } = checkOptions(opts);
  const log = opts.log;
  let backend: OpusBackend = opts.prefer ?? 'native';
  if (backend === 'native' && !loadNative()) {
    if (opts.prefer === 'native')
      log?.warn({ err: nativeLoadError }, 'native opus requested but unavailable; using opusscript wasm');
    backend = 'wasm';
  }
  if (!announced.has(backend)) {
    announced.add(backend);
    if (backend === 'native') log?.info({ backend, lib: '@discordjs/opus' }, 'opus codec backend selected');
    else
      log?.info(
        {
          backend,
          lib: 'opusscript',
          nativeError: nativeLoadError instanceof Error ? nativeLoadError.message : undefined,
        },
        'opus codec backend selected',
      );
  }
  const application = opts.application === 'voip' ? OPUS_APPLICATION_VOIP : OPUS_APPLICATION_AUDIO;
  return backend === 'native'
    ? new NativeCodec(
        loadNative() as NativeCtor,
        opts.sampleRate,
        frameSamples,
        complexity,
        application,
        opts.bitrate,
        log,
      )
    : new WasmCodec(loadWasm(), opts.sampleRate, frameSamples, complexity, application, opts.bitrate, log);
}

abstract class BaseCodec implements OpusCodec {
  abstract readonly backend: OpusBackend;
  readonly sampleRate: number;
  readonly frameSamples: number;
  protected closed = false;
  #corrupt = 0;
  readonly #log: Logger | undefined;

  constructor(sampleRate: number, frameSamples: number, log: Logger | undefined) {
    this.sampleRate = sampleRate;
    this.frameSamples = frameSamples;
    this.#log = log;
  }

  get corruptFrames(): number {
    return this.#corrupt;
  }

  encode(pcm: Int16Array): Buffer {
    if (this.closed) throw new VoiceError(ErrorCode.Internal, 'opus: encode after close');
    if (pcm.length !== this.frameSamples) {
      throw new VoiceError(
        ErrorCode.BadInput,
        `opus: encode needs exactly ${this.frameSamples} samples, got ${pcm.length}`,
      );
    }
    return this.encodeFrame(int16ToBuffer(pcm));
  }

  decode(packet: Uint8Array): Int16Array | null {
    if (this.closed) return null;
    // An empty packet would make libopus conceal 120-360 ms, not one frame: treat it as corrupt.
    if (packet.byteLength === 0) return this.#dropped(packet, 'empty packet');
    try {
      const out = this.decodePacket(
        Buffer.isBuffer(packet) ? packet : Buffer.from(packet.buffer, packet.byteOffset, packet.byteLength),
      );
      return bytesToInt16(out);
    } catch (err) {
      return this.#dropped(packet, err instanceof Error ? err.message : String(err));
    }
  }

  #dropped(packet: Uint8Array, reason: string): null {
    this.#corrupt++;
    // Log the first and then every 100th, so a stream of garbage cannot flood the log.
    if (this.#corrupt === 1 || this.#corrupt % 100 === 0) {
      this.#log?.warn({ bytes: packet.byteLength, reason, corruptFrames: this.#corrupt }, 'opus packet dropped');
    }
    return null;
  }

  protected abstract encodeFrame(pcm: Buffer): Buffer;
  protected abstract decodePacket(packet: Buffer): Buffer;
  abstract close(): void;
}

class NativeCodec extends BaseCodec {
  readonly backend = 'native' as const;
  #impl: NativeOpus;

  constructor(
    ctor: NativeCtor,
    sampleRate: number,
    frameSamples: number,
    complexity: number | undefined,
    application: number,
    bitrate: number | undefined,
    log: Logger | undefined,
  ) {
    super(sampleRate, frameSamples, log);
    // @discordjs/opus holds an encoder and a decoder in one object, created lazily on first use.
    this.#impl = new ctor(sampleRate, 1);
    if (application !== OPUS_APPLICATION_AUDIO) this.#impl.applyEncoderCTL(OPUS_SET_APPLICATION, application);
    if (complexity !== undefined) this.#impl.applyEncoderCTL(OPUS_SET_COMPLEXITY, complexity);
    if (bitrate !== undefined) this.#impl.setBitrate(bitrate);
  }

  protected encodeFrame(pcm: Buffer): Buffer {
    return this.#impl.encode(pcm);
  }

  protected decodePacket(packet: Buffer): Buffer {
    return this.#impl.decode(packet);
  }

  close(): void {
    // The native object frees its libopus state when garbage-collected.
    this.closed = true;
  }
}

class WasmCodec extends BaseCodec {
  readonly backend = 'wasm' as const;
  #impl: WasmOpus;

  constructor(
    ctor: WasmCtor,
    sampleRate: number,
    frameSamples: number,
    complexity: number | undefined,
    application: number,
    bitrate: number | undefined,
    log: Logger | undefined,
  ) {
    super(sampleRate, frameSamples, log);
    this.#impl = new ctor(sampleRate, 1, application);
    if (complexity !== undefined) this.#impl.encoderCTL(OPUS_SET_COMPLEXITY, complexity);
    if (bitrate !== undefined) this.#impl.setBitrate(bitrate);
  }

  protected encodeFrame(pcm: Buffer): Buffer {
    return this.#impl.encode(pcm, this.frameSamples);
  }

  protected decodePacket(packet: Buffer): Buffer {
    return this.#impl.decode(packet);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.#impl.delete();
  }
}
