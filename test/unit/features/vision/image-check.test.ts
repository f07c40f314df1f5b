import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { checkImage } from '../../../../features/vision/image-check.ts';

const JPEG = readFileSync(new URL('../../../fixtures/vision/photo.jpg', import.meta.url));
const PNG = readFileSync(new URL('../../../fixtures/vision/photo.png', import.meta.url));

test('a JPEG and a PNG are read with their sizes', () => {
  assert.deepEqual(checkImage(JPEG), { ok: true, mime: 'image/jpeg', width: 320, height: 240 });
  assert.deepEqual(checkImage(PNG), { ok: true, mime: 'image/png', width: 64, height: 48 });
});

test('text, magic bytes alone and cut or corrupt images are refused', () => {
  const bad = (b: Buffer): string => {
    const r = checkImage(b);
    assert.equal(r.ok, false);
    return r.ok ? '' : r.reason;
  };
  assert.match(bad(Buffer.from('hello, not an image')), /not a JPEG or PNG/);
  assert.match(bad(Buffer.concat([Buffer.from([0xff, 0xd8, 0xff]), Buffer.alloc(500, 0x41)])), /corrupt JPEG/);
  assert.match(bad(JPEG.subarray(0, 400)), /corrupt JPEG/);
  assert.match(bad(JPEG.subarray(0, JPEG.length - 2)), /no end of image/);
  assert.match(bad(Buffer.concat([PNG.subarray(0, 8), Buffer.alloc(100, 0x41)])), /corrupt PNG/);
  const png = Buffer.from(PNG);
  png[17] = 0x7f; // width changed, CRC not
  assert.match(bad(png), /IHDR checksum/);
  assert.match(bad(PNG.subarray(0, 40)), /no end chunk/);
});

test('sizes out of bounds are refused', () => {
  const jpeg = Buffer.from(JPEG);
  const sof = jpeg.indexOf(Buffer.from([0xff, 0xc0]));
  jpeg.writeUInt16BE(0, sof + 5); // height 0
  assert.match((checkImage(jpeg) as { reason: string }).reason, /out of bounds/);
  jpeg.writeUInt16BE(9000, sof + 5);
  assert.match((checkImage(jpeg) as { reason: string }).reason, /out of bounds/);
});
