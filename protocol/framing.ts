/**
 * @module Binary audio framing of the xiaozhi WebSocket protocol, versions 1, 2 and 3 (firmware
 * `main/protocols/protocol.h`). All multi-byte fields are big-endian. The firmware copies exactly
 * `payload_size` bytes without checking the frame length, so what we send must be exact, and what
 * we receive is checked here before anyone trusts it.
 */

export const ProtocolVersion = { V1: 1, V2: 2, V3: 3 } as const;
export type ProtocolVersion = (typeof ProtocolVersion)[keyof typeof ProtocolVersion];

/** Header sizes in bytes per version (v1 is a bare Opus packet). */
export const HEADER_BYTES: Readonly<Record<ProtocolVersion, number>> = { 1: 0, 2: 16, 3: 4 };

/** v3 carries the payload size in 16 bits. */
const V3_MAX_PAYLOAD = 0xffff;

export function isProtocolVersion(v: unknown): v is ProtocolVersion {
  return v === 1 || v === 2 || v === 3;
}

export interface AudioFrame {
  payload: Uint8Array;
  /** v2 only: milliseconds, echoed for server-side AEC; 0 otherwise. */
  timestamp: number;
  /** v2/v3 type field: 0 = Opus. The device never sends anything else. */
  type: number;
}

export type UnframeResult = { ok: true; frame: AudioFrame } | { ok: false; reason: string };

/** Parses one binary WebSocket message from a device. Never throws. */
export function unframeAudio(version: ProtocolVersion, data: Uint8Array): UnframeResult {
  if (version === 1) return { ok: true, frame: { payload: data, timestamp: 0, type: 0 } };
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  if (version === 2) {
    if (data.byteLength < 16)
      return { ok: false, reason: `v2 frame shorter than its 16-byte header (${data.byteLength} bytes)` };
    const type = view.getUint16(2);
    const timestamp = view.getUint32(8);
    const size = view.getUint32(12);
    if (size !== data.byteLength - 16)
      return { ok: false, reason: `v2 payload_size ${size} does not match the ${data.byteLength - 16} bytes present` };
    return { ok: true, frame: { payload: data.subarray(16), timestamp, type } };
  }
  if (data.byteLength < 4)
    return { ok: false, reason: `v3 frame shorter than its 4-byte header (${data.byteLength} bytes)` };
  const type = view.getUint8(0);
  const size = view.getUint16(2);
  if (size !== data.byteLength - 4)
    return { ok: false, reason: `v3 payload_size ${size} does not match the ${data.byteLength - 4} bytes present` };
  return { ok: true, frame: { payload: data.subarray(4), timestamp: 0, type } };
}

/** Builds one binary WebSocket message for the device. */
export function frameAudio(version: ProtocolVersion, payload: Uint8Array, timestamp = 0): Buffer {
  if (version === 1) return Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
  if (version === 2) {
    const out = Buffer.allocUnsafe(16 + payload.byteLength);
    out.writeUInt16BE(2, 0);
    out.writeUInt16BE(0, 2);
    out.writeUInt32BE(0, 4);
    out.writeUInt32BE(timestamp >>> 0, 8);
    out.writeUInt32BE(payload.byteLength, 12);
    out.set(payload, 16);
    return out;
  }
  if (payload.byteLength > V3_MAX_PAYLOAD)
    throw new RangeError(`v3 payload of ${payload.byteLength} bytes exceeds 65535`);
  const out = Buffer.allocUnsafe(4 + payload.byteLength);
  out.writeUInt8(0, 0);
  out.writeUInt8(0, 1);
  out.writeUInt16BE(payload.byteLength, 2);
  out.set(payload, 4);
  return out;
}
