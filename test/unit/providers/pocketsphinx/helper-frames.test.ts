import { test } from 'node:test';
import assert from 'node:assert/strict';
import { encodeFrame, FrameReader, MAX_TEXT_BYTES } from '../../../../providers/pocketsphinx/helper-frames.ts';

function frame(kind: string, id: number, text: string | Buffer): Buffer {
  const body = typeof text === 'string' ? Buffer.from(text) : text;
  const head = Buffer.alloc(9);
  head[0] = kind.charCodeAt(0);
  head.writeUInt32LE(id, 1);
  head.writeUInt32LE(body.length, 5);
  return Buffer.concat([head, body]);
}

test('frames to the helper: kind, id and the samples little-endian', () => {
  const out = encodeFrame('A', 7, new Int16Array([1, -2, 300]).subarray(1));
  assert.deepEqual([...out], [65, 7, 0, 0, 0, 4, 0, 0, 0, 0xfe, 0xff, 0x2c, 0x01]);
  assert.deepEqual([...encodeFrame('F', 0x01020304)], [70, 4, 3, 2, 1, 0, 0, 0, 0]);
});

test('frames from the helper are read across chunk boundaries, UTF-8 intact', () => {
  const bytes = Buffer.concat([frame('Y', 0, ''), frame('P', 3, 'turn the'), frame('R', 3, 'naïve café')]);
  const reader = new FrameReader();
  const got = [];
  for (let i = 0; i < bytes.length; i += 5) got.push(...reader.push(bytes.subarray(i, i + 5)));
  assert.deepEqual(got, [
    { kind: 'Y', id: 0, text: '' },
    { kind: 'P', id: 3, text: 'turn the' },
    { kind: 'R', id: 3, text: 'naïve café' },
  ]);
});

test('an unknown kind or a frame longer than one write of the helper is refused, not skipped', () => {
  assert.throws(() => new FrameReader().push(frame('Z', 1, 'x')), /malformed frame/);
  assert.throws(
    () => new FrameReader().push(frame('P', 1, Buffer.alloc(MAX_TEXT_BYTES + 1, 0x61)).subarray(0, 9)),
    /malformed frame/,
    'refused from its header, before its bytes are buffered',
  );
  assert.equal(
    new FrameReader().push(frame('P', 1, Buffer.alloc(MAX_TEXT_BYTES, 0x61)))[0]?.text.length,
    MAX_TEXT_BYTES,
  );
});
