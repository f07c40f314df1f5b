/**
 * Binary frames a hostile device sends: Opus payloads (random bytes, a valid TOC byte over
 * garbage, empty, oversized) framed for protocol v1/v2/v3, correctly or with lying headers
 * (version, type, reserved, timestamp, payload size larger or smaller than what follows),
 * truncated headers, and messages over the server's size limit.
 */
import fc from 'fast-check';
import { frameAudio, type ProtocolVersion } from '../../protocol/framing.ts';
import { shortPrint, type FuzzInput } from './inputs.ts';

/** RFC 6716 §3.1: config (5 bits), stereo flag, frame-count code (0–3); code 3 has a count byte next. */
const validToc = fc
  .record({
    config: fc.integer({ min: 0, max: 31 }),
    stereo: fc.boolean(),
    code: fc.integer({ min: 0, max: 3 }),
    count: fc.integer({ min: 0, max: 255 }),
  })
  .map(({ config, stereo, code, count }) =>
    code === 3 ? [(config << 3) | (stereo ? 4 : 0) | 3, count] : [(config << 3) | (stereo ? 4 : 0) | code],
  );

export const opusPayload: fc.Arbitrary<{ bytes: Uint8Array; what: string }> = fc.oneof(
  { weight: 4, arbitrary: fc.uint8Array({ maxLength: 400 }).map((bytes) => ({ bytes, what: 'random' })) },
  {
    weight: 4,
    arbitrary: fc
      .tuple(validToc, fc.uint8Array({ maxLength: 300 }))
      .map(([toc, rest]) => ({ bytes: Uint8Array.from([...toc, ...rest]), what: 'toc+garbage' })),
  },
  { weight: 1, arbitrary: fc.constant({ bytes: new Uint8Array(0), what: 'empty' }) },
  // Larger than any Opus packet (1275 bytes per frame), still a legal WebSocket message size.
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: 1276, max: 60_000 })
      .map((n) => ({ bytes: new Uint8Array(n).fill(0x78), what: 'oversized' })),
  },
);

const version = fc.constantFrom<ProtocolVersion>(1, 2, 3);

/** Framed as the firmware frames it (maybe for a version other than the one negotiated). */
const wellFramed = fc
  .tuple(version, opusPayload, fc.nat())
  .map(
    ([v, p, ts]): FuzzInput =>
      shortPrint({ kind: 'binary', bytes: frameAudio(v, p.bytes, ts), what: `v${v} ${p.what}` }),
  );

/** payload_size that is right, a little off, or anything at all. */
function lyingSize(actual: number, max: number): fc.Arbitrary<number> {
  return fc.oneof(
    fc.constant(actual),
    fc.integer({ min: -8, max: 8 }).map((d) => Math.min(max, Math.max(0, actual + d))),
    fc.integer({ min: 0, max }),
  );
}

const v2Lying = opusPayload.chain((p) =>
  fc
    .record({
      ver: fc.integer({ min: 0, max: 0xffff }),
      type: fc.integer({ min: 0, max: 0xffff }),
      reserved: fc.nat(),
      ts: fc.nat(),
      size: lyingSize(p.bytes.byteLength, 0xffffffff),
    })
    .map(({ ver, type, reserved, ts, size }): FuzzInput => {
      const b = Buffer.alloc(16 + p.bytes.byteLength);
      b.writeUInt16BE(ver, 0);
      b.writeUInt16BE(type, 2);
      b.writeUInt32BE(reserved >>> 0, 4);
      b.writeUInt32BE(ts >>> 0, 8);
      b.writeUInt32BE(size >>> 0, 12);
      b.set(p.bytes, 16);
      return shortPrint({ kind: 'binary', bytes: b, what: `v2 lying ${p.what}` });
    }),
);

const v3Lying = opusPayload.chain((p) =>
  fc
    .record({
      type: fc.integer({ min: 0, max: 0xff }),
      reserved: fc.integer({ min: 0, max: 0xff }),
      size: lyingSize(p.bytes.byteLength, 0xffff),
    })
    .map(({ type, reserved, size }): FuzzInput => {
      const b = Buffer.alloc(4 + p.bytes.byteLength);
      b.writeUInt8(type, 0);
      b.writeUInt8(reserved, 1);
      b.writeUInt16BE(size & 0xffff, 2);
      b.set(p.bytes, 4);
      return shortPrint({ kind: 'binary', bytes: b, what: `v3 lying ${p.what}` });
    }),
);

/** Shorter than a v2 header (16 bytes), so also shorter than v3's for the first four lengths. */
const truncatedHeader = fc
  .uint8Array({ maxLength: 15 })
  .map((bytes): FuzzInput => shortPrint({ kind: 'binary', bytes, what: 'truncated header' }));

/** Over `server.maxMessageBytes` (64 KiB by default): `ws` must refuse it. */
const overLimit = fc
  .integer({ min: 65_537, max: 140_000 })
  .map((n): FuzzInput => shortPrint({ kind: 'binary', bytes: new Uint8Array(n), what: 'over the size limit' }));

export const binaryFrame: fc.Arbitrary<FuzzInput> = fc.oneof(
  { weight: 50, arbitrary: wellFramed },
  { weight: 20, arbitrary: v2Lying },
  { weight: 20, arbitrary: v3Lying },
  { weight: 9, arbitrary: truncatedHeader },
  // Rare: it ends the connection at once, and the rest of the script would go unheard.
  { weight: 1, arbitrary: overLimit },
);
