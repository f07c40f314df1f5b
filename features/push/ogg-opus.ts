/**
 * @module Opus packets → an Ogg/Opus file (RFC 7845): the identification header (`OpusHead`), the
 * comment header (`OpusTags`), then the audio packets in pages of up to 255 lacing values, each
 * page with its granule position (48 kHz samples, pre-skip included) and CRC. Mono, mapping
 * family 0: what a device fetching `notify` audio plays. Pure.
 */
import { oggCrc } from '../../audio/opus/ogg-crc.ts';

/** Samples (at 48 kHz) the decoder drops at the start: libopus's encoder delay at 48 kHz. */
export const PRE_SKIP = 312;

/** Frame size in 48 kHz samples of each Opus configuration (RFC 6716 §3.1, the TOC's top 5 bits). */
function frameSamples(config: number): number {
  if (config < 12) return [480, 960, 1920, 2880][config % 4] as number; // SILK: 10, 20, 40, 60 ms
  if (config < 16) return [480, 960][config % 2] as number; // hybrid: 10, 20 ms
  return [120, 240, 480, 960][config % 4] as number; // CELT: 2.5, 5, 10, 20 ms
}

/** Samples (48 kHz) one Opus packet decodes to, from its TOC byte (and frame count for code 3). */
export function opusPacketSamples(packet: Uint8Array): number {
  const toc = packet[0];
  if (toc === undefined) return 0;
  const per = frameSamples(toc >> 3);
  const code = toc & 3;
  if (code === 0) return per;
  if (code === 1 || code === 2) return 2 * per;
  return per * ((packet[1] ?? 0) & 0x3f);
}

function opusHead(inputSampleRate: number): Uint8Array {
  const b = Buffer.alloc(19);
  b.write('OpusHead', 0, 'ascii');
  b.writeUInt8(1, 8); // version
  b.writeUInt8(1, 9); // channels
  b.writeUInt16LE(PRE_SKIP, 10);
  b.writeUInt32LE(inputSampleRate, 12);
  b.writeInt16LE(0, 16); // output gain
  b.writeUInt8(0, 18); // mapping family 0: mono or stereo, no table
  return b;
}

function opusTags(vendor: string): Uint8Array {
  const v = Buffer.from(vendor, 'utf8');
  const b = Buffer.alloc(8 + 4 + v.length + 4);
  b.write('OpusTags', 0, 'ascii');
  b.writeUInt32LE(v.length, 8);
  v.copy(b, 12);
  b.writeUInt32LE(0, 12 + v.length); // no user comments
  return b;
}

/** One page holding whole `packets`. */
function page(
  packets: readonly Uint8Array[],
  granule: bigint,
  serial: number,
  sequence: number,
  flags: number,
): Buffer {
  const lacing: number[] = [];
  for (const p of packets) {
    let n = p.length;
    while (n >= 255) {
      lacing.push(255);
      n -= 255;
    }
    lacing.push(n);
  }
  const body = Buffer.concat(packets);
  const header = Buffer.alloc(27 + lacing.length);
  header.write('OggS', 0, 'ascii');
  header.writeUInt8(0, 4); // stream structure version
  header.writeUInt8(flags, 5);
  header.writeBigInt64LE(granule, 6);
  header.writeUInt32LE(serial, 14);
  header.writeUInt32LE(sequence, 18);
  header.writeUInt32LE(0, 22); // CRC, filled below
  header.writeUInt8(lacing.length, 26);
  Buffer.from(lacing).copy(header, 27);
  const out = Buffer.concat([header, body]);
  out.writeUInt32LE(oggCrc(out), 22);
  return out;
}

const BOS = 0x02;
const EOS = 0x04;

/**
 * A complete Ogg/Opus file of mono `packets` (any Opus frame sizes). `inputSampleRate` is only
 * informative (the rate the audio was encoded from); playback is always at 48 kHz.
 */
export function oggOpus(
  packets: readonly Uint8Array[],
  opts: { inputSampleRate: number; serial?: number; vendor?: string },
): Buffer {
  const serial = opts.serial ?? 1;
  const pages: Buffer[] = [
    page([opusHead(opts.inputSampleRate)], 0n, serial, 0, BOS),
    page([opusTags(opts.vendor ?? 'xiaozhi-server')], 0n, serial, 1, 0),
  ];
  let sequence = 2;
  let granule = BigInt(PRE_SKIP);
  let batch: Uint8Array[] = [];
  let segments = 0;
  const flush = (last: boolean): void => {
    pages.push(page(batch, granule, serial, sequence++, last ? EOS : 0));
    batch = [];
    segments = 0;
  };
  packets.forEach((p, i) => {
    const need = Math.floor(p.length / 255) + 1;
    if (need > 255) throw new RangeError(`an Opus packet of ${p.length} bytes does not fit one Ogg page`);
    if (segments + need > 255) flush(false);
    batch.push(p);
    segments += need;
    granule += BigInt(opusPacketSamples(p));
    if (i === packets.length - 1) flush(true);
  });
  // No audio at all: an end-of-stream page without packets keeps the file well formed.
  if (packets.length === 0) pages.push(page([], granule, serial, sequence, EOS));
  return Buffer.concat(pages);
}
