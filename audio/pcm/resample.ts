/**
 * @module In-process streaming resampler (windowed-sinc, polyphase table). It lets the server turn
 * espeak-ng's 22,050 Hz output (or any PCM at a known rate) into 16/24 kHz without spawning an
 * ffmpeg or sox per sentence: a process start costs 60-90 ms, this costs well under 1 % of a core
 * per real-time stream.
 */

/** Half-width of the kernel in zero crossings; 16 keeps the pass band flat to ~0.9 × Nyquist. */
const ZERO_CROSSINGS = 16;
/** Cut-off as a fraction of the lower Nyquist frequency; the margin is the transition band. */
const CUTOFF = 0.92;
/** Above this many phases the table would be large; such odd ratios are computed per sample. */
const MAX_TABLE_PHASES = 4096;

interface Kernel {
  /** Input samples each side of the output position. */
  readonly half: number;
  /** phases × (2·half) taps, each phase normalised to unit DC gain; null = compute per sample. */
  readonly table: Float32Array | null;
  readonly phases: number;
  readonly cutoff: number;
}

const kernels = new Map<string, Kernel>();

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}

function tapWeight(d: number, cutoff: number, half: number): number {
  // Blackman-windowed sinc, d = distance in input samples from the output position.
  const x = d / half;
  if (x <= -1 || x >= 1) return 0;
  const w = 0.42 + 0.5 * Math.cos(Math.PI * x) + 0.08 * Math.cos(2 * Math.PI * x);
  const a = Math.PI * cutoff * d;
  return (a === 0 ? 1 : Math.sin(a) / a) * cutoff * w;
}

function kernelFor(fromRate: number, toRate: number, zeroCrossings: number): Kernel {
  const key = `${fromRate}:${toRate}:${zeroCrossings}`;
  const cached = kernels.get(key);
  if (cached) return cached;
  const cutoff = Math.min(1, toRate / fromRate) * CUTOFF;
  const half = Math.ceil(zeroCrossings / cutoff);
  const phases = toRate / gcd(fromRate, toRate);
  let table: Float32Array | null = null;
  if (phases <= MAX_TABLE_PHASES) {
    const taps = 2 * half;
    table = new Float32Array(phases * taps);
    for (let p = 0; p < phases; p++) {
      const frac = p / phases;
      let sum = 0;
      for (let j = 0; j < taps; j++) {
        // tap j reads input index floor(t) - half + 1 + j; its distance from t:
        const w = tapWeight(frac + half - 1 - j, cutoff, half);
        table[p * taps + j] = w;
        sum += w;
      }
      for (let j = 0; j < taps; j++) table[p * taps + j] = (table[p * taps + j] as number) / sum;
    }
  }
  const k: Kernel = { half, table, phases, cutoff };
  kernels.set(key, k);
  return k;
}

/**
 * Streaming resampler for one mono s16 stream. Feed chunks with `push`, then `flush` once at
 * the end to drain the kernel's look-ahead. Output is aligned with the input (no added delay).
 */
export class Resampler {
  readonly fromRate: number;
  readonly toRate: number;
  readonly #kernel: Kernel;
  readonly #step: number; // input samples per output sample, as a fraction num/den
  readonly #num: number;
  readonly #den: number;
  /** Pending input as floats; index 0 corresponds to absolute input index #bufStart. */
  #buf: Float32Array;
  #bufLen = 0;
  #bufStart: number;
  #inputTotal = 0;
  #outIndex = 0;
  #flushed = false;

  /**
   * `zeroCrossings`: half-width of the kernel (default 16). Fewer is cheaper and widens the
   * transition band below the lower Nyquist frequency; 8 suits speech with little energy there.
   */
  constructor(fromRate: number, toRate: number, zeroCrossings = ZERO_CROSSINGS) {
    if (!(fromRate > 0 && toRate > 0) || !Number.isInteger(fromRate) || !Number.isInteger(toRate)) {
      throw new RangeError('sample rates must be positive integers');
    }
    if (!Number.isInteger(zeroCrossings) || zeroCrossings < 2)
      throw new RangeError('zeroCrossings must be an integer >= 2');
    this.fromRate = fromRate;
    this.toRate = toRate;
    this.#kernel = kernelFor(fromRate, toRate, zeroCrossings);
    const g = gcd(fromRate, toRate);
    this.#num = fromRate / g;
    this.#den = toRate / g;
    this.#step = fromRate / toRate;
    // Start with `half` zeros of history so the first outputs have a full window.
    this.#buf = new Float32Array(4096);
    this.#bufLen = this.#kernel.half;
    this.#bufStart = -this.#kernel.half;
  }

  /** Resamples a chunk; returns the output samples that are already final. */
  push(pcm: Int16Array): Int16Array {
    if (this.#flushed) throw new Error('resampler already flushed');
    if (this.fromRate === this.toRate) return pcm;
    this.#append(pcm);
    this.#inputTotal += pcm.length;
    return this.#produce(false);
  }

  /** Drains the tail (the last `half` input samples' worth of output). */
  flush(): Int16Array {
    if (this.#flushed || this.fromRate === this.toRate) {
      this.#flushed = true;
      return new Int16Array(0);
    }
    this.#flushed = true;
    this.#append(new Int16Array(this.#kernel.half + 1));
    return this.#produce(true);
  }

  #append(pcm: Int16Array): void {
    if (this.#bufLen + pcm.length > this.#buf.length) {
      const grown = new Float32Array(Math.max(this.#buf.length * 2, this.#bufLen + pcm.length));
      grown.set(this.#buf.subarray(0, this.#bufLen));
      this.#buf = grown;
    }
    for (let i = 0; i < pcm.length; i++) this.#buf[this.#bufLen + i] = (pcm[i] as number) / 32768;
    this.#bufLen += pcm.length;
  }

  #produce(final: boolean): Int16Array {
    const { half, table, cutoff } = this.#kernel;
    const taps = 2 * half;
    const available = this.#bufStart + this.#bufLen; // absolute end (exclusive) of known input
    // Output n sits at input time t = n·num/den; it needs input up to floor(t) + half.
    const limitT = final ? this.#inputTotal : available - half;
    const maxOut = Math.max(0, Math.ceil((limitT * this.#den) / this.#num) - this.#outIndex);
    const out = new Int16Array(maxOut);
    let count = 0;
    const buf = this.#buf;
    const num = this.#num;
    const den = this.#den;
    const bufStart = this.#bufStart;
    const inputTotal = this.#inputTotal;
    // Output n sits at input index i + phase/den; both advance incrementally (no division per sample).
    let n = this.#outIndex;
    let i = Math.floor((n * num) / den);
    let phase = n * num - i * den;
    while (count < maxOut) {
      if (i + half >= available || (final && i >= inputTotal)) break;
      const base = i - half + 1 - bufStart;
      let acc = 0;
      if (table !== null) {
        const row = phase * taps; // phases === den, so the phase index is the table row
        for (let j = 0; j < taps; j++) acc += (buf[base + j] as number) * (table[row + j] as number);
      } else {
        const frac = phase / den;
        let sum = 0;
        for (let j = 0; j < taps; j++) {
          const w = tapWeight(frac + half - 1 - j, cutoff, half);
          acc += (buf[base + j] as number) * w;
          sum += w;
        }
        acc /= sum;
      }
      const s = Math.round(acc * 32768);
      out[count++] = s > 32767 ? 32767 : s < -32768 ? -32768 : s;
      n++;
      phase += num;
      while (phase >= den) {
        phase -= den;
        i++;
      }
    }
    this.#outIndex = n;
    // Drop input that no future output needs.
    const nextI = Math.floor((this.#outIndex * this.#num) / this.#den);
    const keepFrom = nextI - half + 1 - this.#bufStart;
    if (keepFrom > 0) {
      this.#buf.copyWithin(0, keepFrom, this.#bufLen);
      this.#bufLen -= keepFrom;
      this.#bufStart += keepFrom;
    }
    return count === maxOut ? out : out.subarray(0, count);
  }

  /** Input samples per output sample. */
  get ratio(): number {
    return this.#step;
  }
}

/** One-shot resample of a whole buffer. */
export function resample(pcm: Int16Array, fromRate: number, toRate: number): Int16Array {
  if (fromRate === toRate) return pcm;
  const r = new Resampler(fromRate, toRate);
  const a = r.push(pcm);
  const b = r.flush();
  const out = new Int16Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}
