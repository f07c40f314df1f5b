/**
 * @module One downlink stream's input, turned into PCM at the encoder's rate where the encoder
 * lives (a media worker): PCM at another rate resampled, a WAV stream's header read, Ogg/Opus
 * demuxed and decoded by an Opus decoder of the stream's own (straight at the downlink rate, so
 * no resampling). The caller's thread only passes the bytes it received. Bytes that cannot be
 * read throw a `bad_input` VoiceError; the stream is then dropped by its owner (`media-core.ts`).
 */
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import { createOpusCodecSync, type OpusCodec, type OpusSampleRate } from '../opus/codec.ts';
import { OggPacketReader } from '../opus/ogg-reader.ts';
import { ByteAligner } from '../pcm/pcm.ts';
import { Resampler } from '../pcm/resample.ts';
import { WavStreamParser, downmix } from '../pcm/wav.ts';
import type { DownlinkFormat } from './media.ts';

/** Receives PCM at the downlink rate; called synchronously, so it may be a view the input reuses. */
export type PcmSink = (pcm: Int16Array) => void;

export interface DownlinkInput {
  push(bytes: Uint8Array, sink: PcmSink): void;
  /** The input is complete: what is left goes out (a resampler's tail); a cut stream throws. */
  end(sink: PcmSink): void;
  /** Frees what it holds (an Opus decoder's state). Idempotent. */
  close(): void;
}

export function createDownlinkInput(format: DownlinkFormat, rate: OpusSampleRate, log: Logger): DownlinkInput {
  switch (format.container) {
    case 'pcm':
      return new PcmInput(format.sampleRate, rate);
    case 'wav':
      return new WavInput(rate);
    case 'ogg':
      return new OggOpusInput(rate, log);
  }
}

/** s16le mono bytes at `from` Hz. */
class PcmInput implements DownlinkInput {
  readonly #aligner = new ByteAligner();
  readonly #resampler: Resampler | undefined;

  constructor(from: number, to: number) {
    if (!Number.isInteger(from) || from < 1000 || from > 192_000)
      throw new VoiceError(ErrorCode.BadInput, `pcm: unusable sample rate ${from}`);
    this.#resampler = from === to ? undefined : new Resampler(from, to);
  }

  push(bytes: Uint8Array, sink: PcmSink): void {
    const pcm = this.#aligner.push(bytes);
    const out = this.#resampler ? this.#resampler.push(pcm) : pcm;
    if (out.length > 0) sink(out);
  }

  end(sink: PcmSink): void {
    const tail = this.#resampler?.flush();
    if (tail && tail.length > 0) sink(tail);
  }

  close(): void {}
}

/** A 16-bit PCM WAV stream: its header says the rate and channels. */
class WavInput implements DownlinkInput {
  readonly #parser = new WavStreamParser();
  readonly #to: number;
  #resampler: Resampler | undefined;

  constructor(to: number) {
    this.#to = to;
  }

  push(bytes: Uint8Array, sink: PcmSink): void {
    const samples = this.#parser.push(bytes);
    const fmt = this.#parser.format;
    if (samples.length === 0 || !fmt) return;
    this.#resampler ??= new Resampler(fmt.sampleRate, this.#to);
    const out = this.#resampler.push(downmix(samples, fmt.channels));
    if (out.length > 0) sink(out);
  }

  end(sink: PcmSink): void {
    if (!this.#parser.ready) throw new VoiceError(ErrorCode.BadInput, 'wav: the stream ended before its data');
    const tail = this.#resampler?.flush();
    if (tail && tail.length > 0) sink(tail);
  }

  close(): void {}
}

/** Opus's clock: pre-skip and granule positions count 48 kHz samples whatever the decoding rate. */
const OPUS_CLOCK = 48_000;

interface OpusHead {
  channels: number;
  preSkip: number;
  /** Q7.8 dB. */
  gain: number;
}

function bad(message: string): VoiceError {
  return new VoiceError(ErrorCode.BadInput, `ogg/opus: ${message}`);
}

/** The identification header (RFC 7845 §5.1); only mapping family 0 (mono or stereo), what TTS vendors send. */
function parseOpusHead(p: Uint8Array): OpusHead {
  const b = Buffer.from(p.buffer, p.byteOffset, p.byteLength);
  if (b.length < 19 || b.toString('latin1', 0, 8) !== 'OpusHead')
    throw bad('the stream does not start with OpusHead (not Opus)');
  const version = b[8] as number;
  if (version >> 4 !== 0) throw bad(`unknown OpusHead version ${version}`);
  const channels = b[9] as number;
  const family = b[18] as number;
  if (family !== 0 || channels < 1 || channels > 2)
    throw bad(`channel mapping family ${family} with ${channels} channels is not read (mono or stereo only)`);
  return { channels, preSkip: b.readUInt16LE(10), gain: b.readInt16LE(16) };
}

/**
 * Ogg/Opus: headers checked, audio packets decoded at the downlink rate (a stereo stream mixed
 * down by the mono decoder), the encoder's pre-skip dropped, the header's output gain applied.
 * A stream chained after another (a new beginning-of-stream page) starts over with its own headers.
 * The end trimming a final granule position may ask for (under one frame of padding) is not done.
 */
class OggOpusInput implements DownlinkInput {
  readonly #reader = new OggPacketReader();
  readonly #rate: OpusSampleRate;
  readonly #log: Logger;
  #decoder: OpusCodec | undefined;
  #expect: 'head' | 'tags' | 'audio' = 'head';
  /** Decoded samples still to drop at the start (pre-skip, at the decoding rate). */
  #skip = 0;
  #gain = 1;

  constructor(rate: OpusSampleRate, log: Logger) {
    this.#rate = rate;
    this.#log = log;
  }

  push(bytes: Uint8Array, sink: PcmSink): void {
    for (const packet of this.#reader.push(bytes)) {
      if (packet.first) this.#head(packet.data);
      else if (this.#expect === 'tags') {
        const d = packet.data;
        if (d.byteLength < 8 || Buffer.from(d.buffer, d.byteOffset, 8).toString('latin1') !== 'OpusTags')
          throw bad('OpusTags missing after OpusHead');
        this.#expect = 'audio';
      } else this.#audio(packet.data, sink);
    }
  }

  #head(data: Uint8Array): void {
    const head = parseOpusHead(data);
    this.#decoder?.close();
    // 60 ms frames are only the codec's encode size; decode takes any packet.
    this.#decoder = createOpusCodecSync({ sampleRate: this.#rate, log: this.#log });
    this.#skip = Math.round((head.preSkip * this.#rate) / OPUS_CLOCK);
    this.#gain = head.gain === 0 ? 1 : 10 ** (head.gain / 256 / 20);
    this.#expect = 'tags';
  }

  #audio(data: Uint8Array, sink: PcmSink): void {
    const decoder = this.#decoder;
    if (!decoder) throw bad('audio before OpusHead');
    const decoded = decoder.decode(data);
    if (!decoded) throw bad(`an Opus packet of ${data.byteLength} bytes could not be decoded`);
    let pcm = decoded;
    if (this.#skip > 0) {
      const drop = Math.min(this.#skip, pcm.length);
      this.#skip -= drop;
      pcm = pcm.subarray(drop);
    }
    if (pcm.length === 0) return;
    if (this.#gain !== 1) pcm = applyGain(pcm, this.#gain);
    sink(pcm);
  }

  end(): void {
    this.#reader.end();
    if (this.#expect !== 'audio') throw bad('the stream ended before its headers were complete');
  }

  close(): void {
    this.#decoder?.close();
    this.#decoder = undefined;
  }
}

function applyGain(pcm: Int16Array, gain: number): Int16Array {
  const out = new Int16Array(pcm.length);
  for (let i = 0; i < pcm.length; i++) {
    const s = Math.round((pcm[i] as number) * gain);
    out[i] = s > 32767 ? 32767 : s < -32768 ? -32768 : s;
  }
  return out;
}
