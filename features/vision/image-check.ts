/**
 * @module What the vision endpoint sends on: a JPEG or PNG whose header says what it is and how
 * large, within sane bounds. The magic bytes alone are not enough (anyone can write them): a
 * JPEG's segments are walked to its frame header (SOF) and its scan, and it must end its image
 * (EOI); a PNG's IHDR must come first with a valid CRC and its IEND must close it.
 */
import { crc32 } from 'node:zlib';

export type ImageMime = 'image/jpeg' | 'image/png';

export type ImageCheck = { ok: true; mime: ImageMime; width: number; height: number } | { ok: false; reason: string };

/** Pixels per side at most: camera modules give at most a few thousand. */
export const MAX_IMAGE_SIDE = 8192;

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

export function checkImage(data: Buffer): ImageCheck {
  if (data.length >= 3 && data[0] === 0xff && data[1] === 0xd8 && data[2] === 0xff) return checkJpeg(data);
  if (data.length >= 8 && data.subarray(0, 8).equals(PNG_SIGNATURE)) return checkPng(data);
  return { ok: false, reason: 'not a JPEG or PNG image' };
}

function sized(mime: ImageMime, width: number, height: number): ImageCheck {
  if (width < 1 || height < 1 || width > MAX_IMAGE_SIDE || height > MAX_IMAGE_SIDE)
    return { ok: false, reason: `image size ${width}x${height} out of bounds` };
  return { ok: true, mime, width, height };
}

/** SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC). */
const isSof = (m: number): boolean => m >= 0xc0 && m <= 0xcf && m !== 0xc4 && m !== 0xc8 && m !== 0xcc;

function checkJpeg(b: Buffer): ImageCheck {
  let pos = 2;
  let size: { width: number; height: number } | undefined;
  while (pos + 1 < b.length) {
    if (b[pos] !== 0xff) return { ok: false, reason: 'corrupt JPEG: no marker where one belongs' };
    const marker = b[pos + 1] ?? 0;
    if (marker === 0xff) {
      pos++; // fill byte
      continue;
    }
    pos += 2;
    // Markers without a length: TEM, RST0..7.
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) continue;
    if (marker === 0xd8 || marker === 0xd9) return { ok: false, reason: 'corrupt JPEG: image ends before its scan' };
    if (pos + 2 > b.length) break;
    const len = b.readUInt16BE(pos);
    if (len < 2 || pos + len > b.length) return { ok: false, reason: 'corrupt JPEG: a segment runs past the end' };
    if (isSof(marker)) {
      if (len < 8) return { ok: false, reason: 'corrupt JPEG: short frame header' };
      const components = b[pos + 7] ?? 0;
      if (components !== 1 && components !== 3 && components !== 4)
        return { ok: false, reason: 'corrupt JPEG: frame header component count' };
      size = { height: b.readUInt16BE(pos + 3), width: b.readUInt16BE(pos + 5) };
    }
    if (marker === 0xda) {
      if (!size) return { ok: false, reason: 'corrupt JPEG: scan before a frame header' };
      // The entropy-coded scan follows; the image must be closed by EOI after it.
      if (b.lastIndexOf(Buffer.from([0xff, 0xd9])) < pos + len)
        return { ok: false, reason: 'corrupt JPEG: no end of image' };
      return sized('image/jpeg', size.width, size.height);
    }
    pos += len;
  }
  return { ok: false, reason: 'corrupt JPEG: no image scan' };
}

function checkPng(b: Buffer): ImageCheck {
  // Signature, then IHDR: length 13, type, 13 bytes of data, CRC over type and data.
  if (b.length < 8 + 25) return { ok: false, reason: 'corrupt PNG: too short' };
  if (b.readUInt32BE(8) !== 13 || b.toString('latin1', 12, 16) !== 'IHDR')
    return { ok: false, reason: 'corrupt PNG: IHDR is not first' };
  if (crc32(b.subarray(12, 29)) !== b.readUInt32BE(29)) return { ok: false, reason: 'corrupt PNG: IHDR checksum' };
  const bitDepth = b[24] ?? 0;
  if (![1, 2, 4, 8, 16].includes(bitDepth)) return { ok: false, reason: 'corrupt PNG: bit depth' };
  if (b.lastIndexOf('IEND', undefined, 'latin1') < 33) return { ok: false, reason: 'corrupt PNG: no end chunk' };
  return sized('image/png', b.readUInt32BE(16), b.readUInt32BE(20));
}
