/** The TTS protocol's event frames as the client writes and reads them, byte by byte, and what it refuses. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { decodeEventFrame, encodeEventFrame, FrameError } from '../../../../providers/volcengine/frames.ts';

const CAP = 64 * 1024;

function sized(b: Buffer | string): Buffer {
  const body = Buffer.isBuffer(b) ? b : Buffer.from(b);
  const n = Buffer.alloc(4);
  n.writeUInt32BE(body.length);
  return Buffer.concat([n, body]);
}
function event(typeFlags: number, b2: number, ev: number, ...parts: Buffer[]): Buffer {
  const head = Buffer.from([0x11, typeFlags, b2, 0, 0, 0, 0, 0]);
  head.writeInt32BE(ev, 4);
  return Buffer.concat([head, ...parts]);
}

describe('TTS event frames written by the client', () => {
  test('a session event: 11 14 10 00, event, sized session id, sized JSON', () => {
    const f = encodeEventFrame(200, 'sess', { a: 1 });
    assert.equal(f.subarray(0, 4).toString('hex'), '11141000');
    assert.equal(f.readInt32BE(4), 200);
    assert.equal(f.readUInt32BE(8), 4);
    assert.equal(f.toString('utf8', 12, 16), 'sess');
    assert.equal(f.readUInt32BE(16), f.length - 20);
    assert.deepEqual(JSON.parse(f.toString('utf8', 20)), { a: 1 });
  });

  test('StartConnection has no id: event then the sized payload', () => {
    assert.equal(
      encodeEventFrame(1, undefined, {}).toString('hex'),
      '111410000000000100000002' + Buffer.from('{}').toString('hex'),
    );
  });
});

describe('TTS server frames read by the client', () => {
  test('a JSON event (0x9) and an audio response (0xB) with the session id', () => {
    const json = decodeEventFrame(event(0x94, 0x10, 350, sized('s1'), sized('{"text":"你好"}')), CAP);
    assert.deepEqual(json, {
      kind: 'event',
      event: 350,
      audio: false,
      id: 's1',
      payload: Buffer.from('{"text":"你好"}'),
    });
    const audio = decodeEventFrame(event(0xb4, 0x00, 352, sized('s1'), sized(Buffer.from([1, 2, 3, 4]))), CAP);
    assert.deepEqual(audio, { kind: 'event', event: 352, audio: true, id: 's1', payload: Buffer.from([1, 2, 3, 4]) });
  });

  test('Connection* events in both shapes: id then payload, or the one string xinnan reads', () => {
    assert.deepEqual(decodeEventFrame(event(0x94, 0x10, 50, sized('conn'), sized('{}')), CAP), {
      kind: 'event',
      event: 50,
      audio: false,
      id: 'conn',
      payload: Buffer.from('{}'),
    });
    const one = decodeEventFrame(event(0x94, 0x10, 51, sized('{"status_code":45000000}')), CAP);
    assert.equal(one.kind === 'event' && one.payload.toString(), '{"status_code":45000000}');
    assert.equal(one.kind === 'event' && one.id, undefined);
    const bare = decodeEventFrame(event(0x94, 0x10, 52), CAP);
    assert.equal(bare.kind === 'event' && bare.payload.length, 0);
  });

  test('an error frame: code and JSON message', () => {
    const head = Buffer.from([0x11, 0xf0, 0x10, 0, 0, 0, 0, 0]);
    head.writeUInt32BE(55_000_001, 4);
    assert.deepEqual(decodeEventFrame(Buffer.concat([head, sized('{"error":"busy"}')]), CAP), {
      kind: 'error',
      code: 55_000_001,
      message: 'busy',
    });
  });

  test('a gzip payload is inflated through the cap', () => {
    const f = decodeEventFrame(event(0x94, 0x11, 152, sized('s'), sized(gzipSync('{"status_code":20000000}'))), CAP);
    assert.equal(f.kind === 'event' && f.payload.toString(), '{"status_code":20000000}');
    assert.throws(
      () => decodeEventFrame(event(0x94, 0x11, 152, sized('s'), sized(gzipSync(Buffer.alloc(CAP + 1)))), CAP),
      /inflates past/,
    );
  });

  test('refuses frames without an event flag, of another type, too short, or with sizes past the end', () => {
    const bad: Array<[Buffer, RegExp]> = [
      [event(0x91, 0x10, 352, sized('s'), sized('x')), /without an event/],
      [event(0x14, 0x10, 100, sized('s'), sized('{}')), /unexpected message type/],
      [Buffer.from([0x11, 0x94]), /shorter than its header/],
      [Buffer.from([0x11, 0x94, 0x10, 0, 0, 0]), /ends inside its event/],
      [event(0x94, 0x10, 350, Buffer.from([0, 0, 0, 9]), Buffer.from('ab')), /session id size 9/],
      [Buffer.from('this is no tts frame'), /protocol version/],
    ];
    for (const [frame, message] of bad)
      assert.throws(
        () => decodeEventFrame(frame, CAP),
        (e: unknown) => e instanceof FrameError && message.test(e.message),
      );
  });
});
