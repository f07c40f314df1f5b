import { test } from 'node:test';
import assert from 'node:assert/strict';
import { boundaryOf, MultipartError, MultipartReader } from '../../../../features/vision/multipart.ts';

const B = '----ESP32_CAMERA_BOUNDARY';
const LIMITS = { maxFileBytes: 100, maxFieldBytes: 50, maxParts: 4, maxHeaderBytes: 200 };

/** The body as esp32_camera.cc writes it. */
function body(question: string, file: Buffer): Buffer {
  return Buffer.concat([
    Buffer.from(`--${B}\r\nContent-Disposition: form-data; name="question"\r\n\r\n${question}\r\n`),
    Buffer.from(
      `--${B}\r\nContent-Disposition: form-data; name="file"; filename="camera.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`,
    ),
    file,
    Buffer.from(`\r\n--${B}--\r\n`),
  ]);
}

test('the boundary is read from the Content-Type', () => {
  assert.equal(boundaryOf(`multipart/form-data; boundary=${B}`), B);
  assert.equal(boundaryOf(`Multipart/Form-Data;boundary="${B}"`), B);
  assert.equal(boundaryOf('application/json'), null);
  assert.equal(boundaryOf('multipart/form-data'), null);
  assert.equal(boundaryOf(undefined), null);
});

test('the question and the file are read whatever the chunking', () => {
  // The file holds bytes that look like a delimiter's start.
  const file = Buffer.from('\xff\xd8\r\n--\r\n----ESP32_CAMERA_BOUNDAR', 'latin1');
  const whole = body('What is this?', file);
  for (let size = 1; size <= whole.length; size += size < 8 ? 1 : 7) {
    const r = new MultipartReader(B, LIMITS);
    for (let i = 0; i < whole.length; i += size) r.push(whole.subarray(i, i + size));
    r.end();
    assert.equal(r.fields.get('question'), 'What is this?', `chunk ${size}`);
    assert.deepEqual(r.file?.data, file, `chunk ${size}`);
    assert.equal(r.file?.filename, 'camera.jpg');
    assert.equal(r.file?.contentType, 'image/jpeg');
  }
});

function refuses(input: Buffer, status: number, pattern: RegExp, chunk = 8): void {
  const r = new MultipartReader(B, LIMITS);
  assert.throws(
    () => {
      for (let i = 0; i < input.length; i += chunk) r.push(input.subarray(i, i + chunk));
      r.end();
    },
    (err: unknown) => err instanceof MultipartError && err.status === status && pattern.test(err.message),
  );
}

test('a file past its bound is refused while it streams (413)', () => {
  const whole = body('q', Buffer.alloc(1000, 1));
  const r = new MultipartReader(B, LIMITS);
  let fed = 0;
  assert.throws(() => {
    for (; fed < whole.length; fed += 16) r.push(whole.subarray(fed, fed + 16));
  }, /image too large/);
  // Refused before the rest arrived.
  assert.ok(fed < 400, `fed ${fed} of ${whole.length}`);
});

test('bounds and malformed bodies', () => {
  refuses(body('x'.repeat(60), Buffer.from('ab')), 400, /field question too long/);
  refuses(
    Buffer.from(`--${B}\r\nContent-Disposition: form-data; name="q"\r\n${'X: y\r\n'.repeat(60)}\r\n`),
    400,
    /headers too large/,
  );
  const many = Buffer.from(`--${B}\r\nContent-Disposition: form-data; name="a"\r\n\r\nv\r\n`.repeat(5) + `--${B}--`);
  refuses(many, 400, /too many multipart parts/);
  refuses(Buffer.from('x'.repeat(2000)), 400, /no multipart boundary/);
  refuses(Buffer.from(`--${B}\r\nContent-Disposition: form-data; name="question"\r\n\r\nabc`), 400, /ended early/);
  refuses(Buffer.from(`--${B}\r\nnocolon\r\n\r\n`), 400, /malformed multipart part header/);
  refuses(Buffer.from(`--${B}\r\nContent-Disposition: attachment; name="a"\r\n\r\n`), 400, /not form-data/);
  refuses(Buffer.from(`--${B}XX`), 400, /malformed multipart boundary line/);
});
