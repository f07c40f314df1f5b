import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { frameAudio, HEADER_BYTES, unframeAudio } from '../../../protocol/framing.ts';

describe('binary framing', () => {
  const payload = new Uint8Array([9, 8, 7, 6, 5]);

  test('v1 is the bare packet', () => {
    const f = frameAudio(1, payload);
    assert.deepEqual([...f], [...payload]);
    const r = unframeAudio(1, f);
    assert.ok(r.ok);
    assert.deepEqual([...r.frame.payload], [...payload]);
  });

  test('v2 layout: version, type, reserved, timestamp, size, all big-endian', () => {
    const f = frameAudio(2, payload, 0x01020304);
    assert.equal(f.length, HEADER_BYTES[2] + payload.length);
    assert.equal(f.readUInt16BE(0), 2);
    assert.equal(f.readUInt16BE(2), 0);
    assert.equal(f.readUInt32BE(4), 0);
    assert.equal(f.readUInt32BE(8), 0x01020304);
    assert.equal(f.readUInt32BE(12), payload.length);
    const r = unframeAudio(2, f);
    assert.ok(r.ok);
    assert.equal(r.frame.timestamp, 0x01020304);
    assert.deepEqual([...r.frame.payload], [...payload]);
  });

  test('v3 layout: type, reserved, u16 size', () => {
    const f = frameAudio(3, payload);
    assert.deepEqual([...f.subarray(0, 4)], [0, 0, 0, 5]);
    const r = unframeAudio(3, f);
    assert.ok(r.ok);
    assert.deepEqual([...r.frame.payload], [...payload]);
  });

  test('v3 refuses payloads over 65535 bytes', () => {
    assert.throws(() => frameAudio(3, new Uint8Array(70_000)), RangeError);
  });

  test('truncated headers and lying size fields are rejected with a reason', () => {
    for (const [v, data] of [
      [2, new Uint8Array(15)],
      [3, new Uint8Array(3)],
    ] as const) {
      const r = unframeAudio(v, data);
      assert.equal(r.ok, false);
      if (!r.ok) assert.match(r.reason, /shorter than/);
    }
    const lying2 = frameAudio(2, payload);
    lying2.writeUInt32BE(99, 12);
    const r2 = unframeAudio(2, lying2);
    assert.equal(r2.ok, false);
    const lying3 = frameAudio(3, payload);
    lying3.writeUInt16BE(1, 2);
    assert.equal(unframeAudio(3, lying3).ok, false);
  });

  test('a frame inside a larger buffer (offset view) parses correctly', () => {
    const big = Buffer.concat([Buffer.alloc(7, 0xaa), frameAudio(2, payload, 5)]);
    const view = new Uint8Array(big.buffer, big.byteOffset + 7, big.length - 7);
    const r = unframeAudio(2, view);
    assert.ok(r.ok);
    assert.equal(r.frame.timestamp, 5);
    assert.deepEqual([...r.frame.payload], [...payload]);
  });
});
