/**
 * Binary audio framing of the xiaozhi protocol. v1: the bare Opus packet; v2: a 16-byte
 * big-endian header (version, type, reserved, timestamp ms, payload size); v3: a 4-byte header
 * (type, reserved, u16 payload size). The version comes from OTA `websocket.version`.
 */

/**
 * Wraps one Opus packet for the uplink.
 * @param {1|2|3} version
 * @param {Uint8Array} payload
 * @param {number} [timestampMs] only used by v2 (server-side AEC); 0 otherwise
 * @returns {Uint8Array}
 */
export function frameAudio(version, payload, timestampMs = 0) {
  if (version === 2) {
    const out = new Uint8Array(16 + payload.length);
    const v = new DataView(out.buffer);
    v.setUint16(0, 2);
    v.setUint16(2, 0);
    v.setUint32(4, 0);
    v.setUint32(8, timestampMs >>> 0);
    v.setUint32(12, payload.length);
    out.set(payload, 16);
    return out;
  }
  if (version === 3) {
    const out = new Uint8Array(4 + payload.length);
    const v = new DataView(out.buffer);
    v.setUint8(0, 0);
    v.setUint8(1, 0);
    v.setUint16(2, payload.length);
    out.set(payload, 4);
    return out;
  }
  return payload;
}

/**
 * Extracts the Opus packet from a downlink frame; null when the header does not match the data
 * (the firmware trusts the size field; we refuse instead of reading past the end).
 * @param {1|2|3} version
 * @param {Uint8Array} frame
 * @returns {Uint8Array | null}
 */
export function unframeAudio(version, frame) {
  if (version === 2) {
    if (frame.length < 16) return null;
    const size = new DataView(frame.buffer, frame.byteOffset, frame.byteLength).getUint32(12);
    return 16 + size === frame.length ? frame.subarray(16) : null;
  }
  if (version === 3) {
    if (frame.length < 4) return null;
    const size = new DataView(frame.buffer, frame.byteOffset, frame.byteLength).getUint16(2);
    return 4 + size === frame.length ? frame.subarray(4) : null;
  }
  return frame.length > 0 ? frame : null;
}
