/**
 * @module Ogg's page checksum (RFC 3533): CRC-32 with polynomial 0x04c11db7, no reflection,
 * initial value and final XOR 0, over the whole page with its CRC field as zeros. One table for
 * the writer (`features/push/ogg-opus.ts`) and the reader (`ogg-reader.ts`).
 */

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let r = i << 24;
    for (let j = 0; j < 8; j++) r = r & 0x80000000 ? (r << 1) ^ 0x04c11db7 : r << 1;
    t[i] = r >>> 0;
  }
  return t;
})();

/** The CRC of `bytes` continued from `crc` (0 to start): a page can be summed in pieces. */
export function oggCrc(bytes: Uint8Array, crc = 0): number {
  for (let i = 0; i < bytes.length; i++)
    crc = ((crc << 8) ^ (CRC_TABLE[((crc >>> 24) ^ (bytes[i] as number)) & 0xff] as number)) >>> 0;
  return crc;
}
