/**
 * @module PCM helpers shared by every audio stage: s16le byte/sample views (zero-copy where the
 * alignment allows), duration math, energy, a framer that cuts arbitrary chunks into exact codec
 * frames, and a byte aligner for streams whose chunks split a sample in half.
 * All PCM in the project is signed 16-bit little-endian mono unless a name says otherwise.
 */

/** Bytes per s16 sample. */
export const BYTES_PER_SAMPLE = 2;

/**
 * Views s16le bytes as samples. Zero-copy when the view is 2-byte aligned (Node's pooled Buffers
 * often are not, hence the copy fallback). A trailing odd byte is ignored: use `ByteAligner` for
 * streams that can split a sample.
 */
export function bytesToInt16(bytes: Uint8Array): Int16Array {
  const samples = Math.floor(bytes.byteLength / BYTES_PER_SAMPLE);
  if (bytes.byteOffset % BYTES_PER_SAMPLE === 0) return new Int16Array(bytes.buffer, bytes.byteOffset, samples);
  const copy = new Int16Array(samples);
  new Uint8Array(copy.buffer).set(bytes.subarray(0, samples * BYTES_PER_SAMPLE));
  return copy;
}

/** Views samples as a Buffer over the same memory (no copy). */
export function int16ToBuffer(pcm: Int16Array): Buffer {
  return Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);
}

/** Number of samples in `ms` at `sampleRate` (rounded down). */
export function samplesForMs(ms: number, sampleRate: number): number {
  return Math.floor((ms * sampleRate) / 1000);
}

/** Duration in ms of `samples` at `sampleRate`. */
export function durationMs(samples: number, sampleRate: number): number {
  return (samples * 1000) / sampleRate;
}

/** Root-mean-square level of the samples, in sample units (0..32768). 0 for an empty array. */
export function rms(pcm: Int16Array): number {
  if (pcm.length === 0) return 0;
  let sum = 0;
  for (let i = 0; i < pcm.length; i++) {
    const s = pcm[i] as number;
    sum += s * s;
  }
  return Math.sqrt(sum / pcm.length);
}

/** Level relative to full scale in dB (-Infinity for digital silence). */
export function dbfs(pcm: Int16Array): number {
  const r = rms(pcm);
  return r === 0 ? -Infinity : 20 * Math.log10(r / 32768);
}

/** Concatenates sample arrays into one new array. */
export function concatInt16(parts: readonly Int16Array[]): Int16Array {
  let total = 0;
  for (const p of parts) total += p.length;
  const out = new Int16Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Converts s16 samples to float32 in [-1, 1) (the form ONNX models expect). */
export function int16ToFloat32(pcm: Int16Array, out = new Float32Array(pcm.length)): Float32Array {
  for (let i = 0; i < pcm.length; i++) out[i] = (pcm[i] as number) / 32768;
  return out;
}

/**
 * Re-aligns a byte stream to whole samples: a chunk that ends in the middle of a sample keeps its
 * last byte for the next chunk. Child-process pipes split at arbitrary byte counts.
 */
export class ByteAligner {
  #carry: number | undefined = undefined;

  /** Returns the whole samples now available (possibly empty). */
  push(bytes: Uint8Array): Int16Array {
    if (bytes.byteLength === 0) return new Int16Array(0);
    if (this.#carry === undefined) {
      const whole = bytes.byteLength - (bytes.byteLength % BYTES_PER_SAMPLE);
      if (whole !== bytes.byteLength) this.#carry = bytes[bytes.byteLength - 1];
      return bytesToInt16(bytes.subarray(0, whole));
    }
    const joined = new Uint8Array(bytes.byteLength + 1);
    joined[0] = this.#carry;
    joined.set(bytes, 1);
    this.#carry = undefined;
    return this.push(joined);
  }

  /** True when half a sample is still waiting (a truncated stream). */
  get pending(): boolean {
    return this.#carry !== undefined;
  }
}

/**
 * Cuts a stream of arbitrary-size sample chunks into frames of exactly `frameSamples`. Frames
 * returned by `push` are fresh arrays the caller may keep. `flush` pads the remainder with
 * silence so the last codec frame is complete.
 */
export class PcmFramer {
  readonly frameSamples: number;
  #buf: Int16Array;
  #fill = 0;

  constructor(frameSamples: number) {
    if (!Number.isInteger(frameSamples) || frameSamples <= 0)
      throw new RangeError('frameSamples must be a positive integer');
    this.frameSamples = frameSamples;
    this.#buf = new Int16Array(frameSamples);
  }

  /** Samples waiting for the next frame. */
  get buffered(): number {
    return this.#fill;
  }

  push(pcm: Int16Array): Int16Array[] {
    const frames: Int16Array[] = [];
    let at = 0;
    while (at < pcm.length) {
      const take = Math.min(this.frameSamples - this.#fill, pcm.length - at);
      this.#buf.set(pcm.subarray(at, at + take), this.#fill);
      this.#fill += take;
      at += take;
      if (this.#fill === this.frameSamples) {
        frames.push(this.#buf);
        this.#buf = new Int16Array(this.frameSamples);
        this.#fill = 0;
      }
    }
    return frames;
  }

  /** The last partial frame padded with silence, or null when nothing is buffered. */
  flush(): Int16Array | null {
    if (this.#fill === 0) return null;
    const frame = this.#buf; // the tail is still zero: a fresh array is zero-filled
    this.#buf = new Int16Array(this.frameSamples);
    this.#fill = 0;
    return frame;
  }

  /** Drops whatever is buffered. */
  reset(): void {
    this.#buf.fill(0);
    this.#fill = 0;
  }
}
