/**
 * @module Minimal WAV (RIFF PCM s16) support: a streaming header parser, so TTS output such as
 * espeak-ng's can be used without an ffmpeg process, and a writer for uploads to ASR services.
 * Streaming writers put a placeholder in the data length (espeak-ng: 0x7FFFF000), so a length at
 * or above `UNBOUNDED_DATA` means "until end of stream".
 */
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import { ByteAligner, int16ToBuffer } from './pcm.ts';

const UNBOUNDED_DATA = 0x7fff0000;
/** Refuse headers that keep going: a real header is well under 1 KiB. */
const MAX_HEADER_BYTES = 64 * 1024;

export interface WavFormat {
  sampleRate: number;
  channels: number;
}

/**
 * Incremental parser. `push` returns the s16 samples (interleaved if multichannel) that follow
 * the header, `format` is set once the header is read. Throws a BadInput VoiceError for
 * anything but 16-bit PCM WAV.
 */
export class WavStreamParser {
  format: WavFormat | undefined;
  #head: Buffer = Buffer.alloc(0);
  #inData = false;
  /** Data bytes still expected; Infinity for a streaming (placeholder-length) file. */
  #remaining = Infinity;
  readonly #aligner = new ByteAligner();

  push(bytes: Uint8Array): Int16Array {
    if (this.#inData) return this.#data(bytes);
    this.#head = Buffer.concat([this.#head, bytes]);
    const h = this.#head;
    if (h.length < 12) return new Int16Array(0);
    if (h.toString('latin1', 0, 4) !== 'RIFF' || h.toString('latin1', 8, 12) !== 'WAVE') {
      throw new VoiceError(ErrorCode.BadInput, 'wav: not a RIFF/WAVE stream');
    }
    let at = 12;
    while (at + 8 <= h.length) {
      const id = h.toString('latin1', at, at + 4);
      const size = h.readUInt32LE(at + 4);
      if (id === 'data') {
        if (!this.format) throw new VoiceError(ErrorCode.BadInput, 'wav: data chunk before fmt chunk');
        this.#inData = true;
        this.#remaining = size >= UNBOUNDED_DATA ? Infinity : size;
        const rest = h.subarray(at + 8);
        this.#head = Buffer.alloc(0);
        return this.#data(rest);
      }
      if (at + 8 + size > h.length) break; // chunk not complete yet
      if (id === 'fmt ') this.format = parseFmt(h.subarray(at + 8, at + 8 + size));
      at += 8 + size + (size % 2); // chunks are word-aligned
    }
    if (h.length > MAX_HEADER_BYTES) throw new VoiceError(ErrorCode.BadInput, 'wav: no data chunk in the first 64 KiB');
    return new Int16Array(0);
  }

  /** True once the header has been read. */
  get ready(): boolean {
    return this.#inData;
  }

  #data(bytes: Uint8Array): Int16Array {
    let chunk = bytes;
    if (this.#remaining !== Infinity) {
      chunk = bytes.subarray(0, Math.max(0, Math.min(bytes.byteLength, this.#remaining)));
      this.#remaining -= chunk.byteLength;
    }
    return this.#aligner.push(chunk);
  }
}

function parseFmt(b: Buffer): WavFormat {
  if (b.length < 16) throw new VoiceError(ErrorCode.BadInput, 'wav: fmt chunk too short');
  const tag = b.readUInt16LE(0);
  const channels = b.readUInt16LE(2);
  const sampleRate = b.readUInt32LE(4);
  const bits = b.readUInt16LE(14);
  // 1 = PCM, 0xFFFE = WAVE_FORMAT_EXTENSIBLE (PCM sub-format assumed for 16-bit)
  if ((tag !== 1 && tag !== 0xfffe) || bits !== 16) {
    throw new VoiceError(ErrorCode.BadInput, `wav: only 16-bit PCM is supported (format ${tag}, ${bits} bit)`);
  }
  if (channels < 1 || sampleRate < 1000)
    throw new VoiceError(ErrorCode.BadInput, 'wav: bad channel count or sample rate');
  return { sampleRate, channels };
}

/** Averages interleaved channels into mono. */
export function downmix(pcm: Int16Array, channels: number): Int16Array {
  if (channels === 1) return pcm;
  const frames = Math.floor(pcm.length / channels);
  const out = new Int16Array(frames);
  for (let i = 0; i < frames; i++) {
    let sum = 0;
    for (let c = 0; c < channels; c++) sum += pcm[i * channels + c] as number;
    out[i] = Math.round(sum / channels);
  }
  return out;
}

/** A complete mono 16-bit WAV file for `pcm`. */
export function encodeWav(pcm: Int16Array, sampleRate: number): Buffer {
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'latin1');
  header.writeUInt32LE(36 + pcm.byteLength, 4);
  header.write('WAVE', 8, 'latin1');
  header.write('fmt ', 12, 'latin1');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(sampleRate, 24);
  header.writeUInt32LE(sampleRate * 2, 28); // byte rate
  header.writeUInt16LE(2, 32); // block align
  header.writeUInt16LE(16, 34);
  header.write('data', 36, 'latin1');
  header.writeUInt32LE(pcm.byteLength, 40);
  return Buffer.concat([header, int16ToBuffer(pcm)]);
}
