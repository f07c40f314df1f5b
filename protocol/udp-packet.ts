/**
 * @module The audio datagram of the firmware's MQTT+UDP transport. Each datagram is a 16-byte
 * header followed by one Opus packet encrypted with AES-128-CTR, the whole header being the
 * counter block:
 *
 *   |type u8 = 0x01|flags u8|payload_len u16|ssrc u32|timestamp u32|sequence u32|payload…|
 *
 * all big-endian. The session's key and nonce (16 bytes each) travel in the server hello; the
 * device builds its headers by copying the nonce and overwriting payload_len, timestamp and
 * sequence, so bytes 0–1 (type, flags) and 4–7 (ssrc) come from the nonce. Pure: no I/O.
 */
import { createCipheriv } from 'node:crypto';

export const UDP_HEADER_BYTES = 16;
/** The only packet type the firmware sends and accepts (byte 0). */
export const UDP_AUDIO_TYPE = 0x01;
/** AES-128: key and nonce are 16 bytes, 32 hex characters in the hello. */
export const UDP_KEY_BYTES = 16;

export interface UdpHeader {
  type: number;
  flags: number;
  payloadLength: number;
  ssrc: number;
  timestamp: number;
  sequence: number;
}

export function encodeUdpHeader(h: UdpHeader): Buffer {
  const b = Buffer.alloc(UDP_HEADER_BYTES);
  b.writeUInt8(h.type, 0);
  b.writeUInt8(h.flags, 1);
  b.writeUInt16BE(h.payloadLength, 2);
  b.writeUInt32BE(h.ssrc >>> 0, 4);
  b.writeUInt32BE(h.timestamp >>> 0, 8);
  b.writeUInt32BE(h.sequence >>> 0, 12);
  return b;
}

/** The header of a datagram of at least 16 bytes (no other check). */
export function decodeUdpHeader(datagram: Uint8Array): UdpHeader | null {
  if (datagram.byteLength < UDP_HEADER_BYTES) return null;
  const b = Buffer.from(datagram.buffer, datagram.byteOffset, UDP_HEADER_BYTES);
  return {
    type: b.readUInt8(0),
    flags: b.readUInt8(1),
    payloadLength: b.readUInt16BE(2),
    ssrc: b.readUInt32BE(4),
    timestamp: b.readUInt32BE(8),
    sequence: b.readUInt32BE(12),
  };
}

/** Why a datagram was not accepted before decryption. */
export type UdpRejection = 'short' | 'type' | 'length';

export type UdpParse =
  | { ok: true; header: UdpHeader; iv: Buffer; ciphertext: Buffer }
  | { ok: false; reason: UdpRejection };

/** Checks the shape: a whole header, type 0x01, and exactly `payload_len` bytes after it. */
export function parseUdpDatagram(datagram: Uint8Array): UdpParse {
  const header = decodeUdpHeader(datagram);
  if (!header) return { ok: false, reason: 'short' };
  if (header.type !== UDP_AUDIO_TYPE) return { ok: false, reason: 'type' };
  if (datagram.byteLength !== UDP_HEADER_BYTES + header.payloadLength) return { ok: false, reason: 'length' };
  const buf = Buffer.from(datagram.buffer, datagram.byteOffset, datagram.byteLength);
  return { ok: true, header, iv: buf.subarray(0, UDP_HEADER_BYTES), ciphertext: buf.subarray(UDP_HEADER_BYTES) };
}

/** AES-128-CTR with `iv` as the first counter block; the same call encrypts and decrypts. */
export function aesCtr(key: Uint8Array, iv: Uint8Array, data: Uint8Array): Buffer {
  if (key.byteLength !== UDP_KEY_BYTES || iv.byteLength !== UDP_HEADER_BYTES)
    throw new RangeError('AES-128-CTR needs a 16-byte key and a 16-byte counter block');
  const c = createCipheriv('aes-128-ctr', key, iv);
  return Buffer.concat([c.update(data), c.final()]);
}

/** One datagram: the header for `payload` (its length filled in) and the payload encrypted under it. */
export function sealUdpPacket(key: Uint8Array, h: Omit<UdpHeader, 'payloadLength'>, payload: Uint8Array): Buffer {
  if (payload.byteLength > 0xffff) throw new RangeError('payload longer than 65535 bytes');
  const header = encodeUdpHeader({ ...h, payloadLength: payload.byteLength });
  return Buffer.concat([header, aesCtr(key, header, payload)]);
}

export type UdpOpen = { ok: true; header: UdpHeader; payload: Buffer } | { ok: false; reason: UdpRejection };

/** Checks a datagram's shape and decrypts its payload (CTR has no tag: what it decrypts to is the caller's to judge). */
export function openUdpPacket(key: Uint8Array, datagram: Uint8Array): UdpOpen {
  const p = parseUdpDatagram(datagram);
  if (!p.ok) return p;
  return { ok: true, header: p.header, payload: aesCtr(key, p.iv, p.ciphertext) };
}

/** Sequence numbers are u32 and start at 1 each session: newer means strictly greater. */
export function isNewerSequence(sequence: number, last: number): boolean {
  return sequence > last;
}

/** Frame durations of the Opus TOC configurations 0–31, in tenths of a millisecond (RFC 6716 §3.1). */
const CONFIG_DURATION_TENTHS = [
  100,
  200,
  400,
  600,
  100,
  200,
  400,
  600,
  100,
  200,
  400,
  600, // SILK NB, MB, WB
  100,
  200,
  100,
  200, // Hybrid SWB, FB
  25,
  50,
  100,
  200,
  25,
  50,
  100,
  200,
  25,
  50,
  100,
  200,
  25,
  50,
  100,
  200, // CELT NB, WB, SWB, FB
];

/**
 * Duration of an Opus packet in ms from its TOC byte (and frame count byte for code 3), or null
 * when the packet cannot be Opus: empty, a code-3 count of 0, or over 120 ms (RFC 6716 §3.2.5).
 */
export function opusPacketMs(packet: Uint8Array): number | null {
  const toc = packet[0];
  if (toc === undefined) return null;
  const tenths = CONFIG_DURATION_TENTHS[toc >> 3] as number;
  const code = toc & 0x03;
  let frames = code === 0 ? 1 : 2;
  if (code === 3) {
    const countByte = packet[1];
    if (countByte === undefined) return null;
    frames = countByte & 0x3f;
    if (frames === 0) return null;
  }
  const total = tenths * frames;
  return total > 1200 ? null : total / 10;
}

/**
 * Whether a decrypted payload is a plausible uplink frame: mono Opus of the duration the device
 * announced. With CTR a wrong key or a forged datagram decrypts to noise, whose TOC byte passes
 * this about one time in twenty; it is a cheap filter, not authentication.
 */
export function plausibleOpusFrame(payload: Uint8Array, frameDurationMs: number): boolean {
  const toc = payload[0];
  if (toc === undefined || (toc & 0x04) !== 0) return false;
  return opusPacketMs(payload) === frameDurationMs;
}
