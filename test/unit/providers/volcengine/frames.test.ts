/** The client's reading and writing of sauc frames, byte by byte, and what it refuses. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { gunzipSync, gzipSync } from 'node:zlib';
import {
  decodeServerFrame,
  encodeAudioPacket,
  encodeFullClientRequest,
  FrameError,
} from '../../../../providers/volcengine/frames.ts';

const CAP = 64 * 1024;

function response(flags: number, compression: number, json: unknown, sequence?: number): Buffer {
  let body = Buffer.from(JSON.stringify(json));
  if (compression === 1) body = gzipSync(body);
  const parts = [Buffer.from([0x11, 0x90 | flags, 0x10 | compression, 0])];
  if (sequence !== undefined) {
    const s = Buffer.alloc(4);
    s.writeInt32BE(sequence);
    parts.push(s);
  }
  const size = Buffer.alloc(4);
  size.writeUInt32BE(body.length);
  return Buffer.concat([...parts, size, body]);
}

describe('sauc frames written by the client', () => {
  test('the full client request: header 11 10 11 00, size, gzip JSON', () => {
    const f = encodeFullClientRequest({ audio: { rate: 16000 } });
    assert.deepEqual([...f.subarray(0, 4)], [0x11, 0x10, 0x11, 0x00]);
    assert.equal(f.readUInt32BE(4), f.length - 8);
    assert.deepEqual(JSON.parse(gunzipSync(f.subarray(8)).toString()), { audio: { rate: 16000 } });
  });

  test('audio packets: no sequence, raw gzip payload; the last one flagged 0b0010, possibly empty', () => {
    const pcm = Buffer.from([1, 2, 3, 4]);
    const a = encodeAudioPacket(pcm, false);
    assert.deepEqual([...a.subarray(0, 4)], [0x11, 0x20, 0x01, 0x00]);
    assert.equal(a.readUInt32BE(4), a.length - 8);
    assert.deepEqual(gunzipSync(a.subarray(8)), pcm);
    const last = encodeAudioPacket(Buffer.alloc(0), true);
    assert.deepEqual([...last.subarray(0, 4)], [0x11, 0x22, 0x01, 0x00]);
    assert.equal(gunzipSync(last.subarray(8)).length, 0);
  });
});

describe('sauc frames read by the client', () => {
  test('responses with a sequence, uncompressed or gzip; bit 1 of the flags marks the final whatever the sign', () => {
    const json = { result: { text: '你好' } };
    assert.deepEqual(decodeServerFrame(response(0b0001, 0, json, 1), CAP), {
      kind: 'response',
      last: false,
      payload: json,
    });
    assert.deepEqual(decodeServerFrame(response(0b0011, 1, json, -3), CAP), {
      kind: 'response',
      last: true,
      payload: json,
    });
    assert.deepEqual(decodeServerFrame(response(0b0011, 0, json, 3), CAP), {
      kind: 'response',
      last: true,
      payload: json,
    });
    // Without a sequence flag, the size follows the header directly.
    assert.deepEqual(decodeServerFrame(response(0b0000, 0, json), CAP), {
      kind: 'response',
      last: false,
      payload: json,
    });
  });

  test('error frames: code and the JSON error text, or the text as it came', () => {
    const err = (body: Buffer): Buffer => {
      const h = Buffer.alloc(12);
      h.set([0x11, 0xf0, 0x10, 0x00]);
      h.writeUInt32BE(45000081, 4);
      h.writeUInt32BE(body.length, 8);
      return Buffer.concat([h, body]);
    };
    assert.deepEqual(decodeServerFrame(err(Buffer.from('{"error":"[Timeout waiting next packet]"}')), CAP), {
      kind: 'error',
      code: 45000081,
      message: '[Timeout waiting next packet]',
    });
    assert.deepEqual(decodeServerFrame(err(Buffer.from('plain words')), CAP), {
      kind: 'error',
      code: 45000081,
      message: 'plain words',
    });
  });

  test('refuses short frames, other versions and types, sizes past the frame, non-JSON, and gzip past the cap', () => {
    const json = { result: { text: 'x' } };
    const cases: Array<[Buffer, RegExp]> = [
      [Buffer.from([0x11, 0x91]), /shorter than its header/],
      [Buffer.from([0x21, 0x91, 0x10, 0, 0, 0, 0, 1, 0, 0, 0, 0]), /protocol version 2/],
      [Buffer.from([0x11, 0xc1, 0x10, 0, 0, 0, 0, 1, 0, 0, 0, 0]), /unexpected message type/],
      [Buffer.from([0x11, 0x91, 0x10, 0, 0, 0, 0, 1, 0, 0, 0, 9, 0x7b]), /size 9 is more than the 1 bytes/],
      [Buffer.from([0x11, 0x91, 0x10, 0, 0, 0, 0, 1]), /ends inside its payload size/],
      [Buffer.from([0x11, 0x91, 0x12, 0, 0, 0, 0, 1, 0, 0, 0, 0]), /unknown compression 2/],
      [Buffer.from([0x11, 0x91, 0x10, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0x7b, 0x7b]), /not JSON/],
      [response(0b0001, 1, { result: { text: 'x'.repeat(CAP) } }, 1), /inflates past/],
    ];
    for (const [frame, message] of cases)
      assert.throws(
        () => decodeServerFrame(frame, CAP),
        (e: unknown) => e instanceof FrameError && message.test(e.message),
        message.source,
      );
    const notGzip = response(0b0001, 0, json, 1);
    notGzip[2] = 0x11;
    assert.throws(() => decodeServerFrame(notGzip, CAP), /not valid gzip/);
  });
});
