/**
 * The Ogg page reader a media worker demuxes a TTS's Ogg/Opus answer with: the packets of our own
 * muxer and of hand-made pages (a packet across pages, chained streams) come back whole however
 * the bytes are split; every fault a stream can have throws a `bad_input` naming it, and what it
 * holds is bounded.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { OggPacketReader, type OggPacket } from '../../../audio/opus/ogg-reader.ts';
import { oggCrc } from '../../../audio/opus/ogg-crc.ts';
import { oggOpus } from '../../../features/push/ogg-opus.ts';
import { VoiceError } from '../../../core/errors.ts';

/** One page of raw segments (`lacing` given, so a packet may continue on the next page). */
function page(o: {
  body: Uint8Array;
  lacing: number[];
  flags?: number;
  serial?: number;
  sequence?: number;
  granule?: bigint;
}): Buffer {
  const header = Buffer.alloc(27 + o.lacing.length);
  header.write('OggS', 0, 'latin1');
  header.writeUInt8(o.flags ?? 0, 5);
  header.writeBigInt64LE(o.granule ?? 0n, 6);
  header.writeUInt32LE(o.serial ?? 7, 14);
  header.writeUInt32LE(o.sequence ?? 0, 18);
  header.writeUInt8(o.lacing.length, 26);
  Buffer.from(o.lacing).copy(header, 27);
  const out = Buffer.concat([header, o.body]);
  out.writeUInt32LE(oggCrc(out), 22);
  return out;
}

const filled = (n: number, v: number): Buffer => Buffer.alloc(n, v);

/** Feeds `bytes` in pieces of the given sizes (cycled); returns every packet. */
function readInPieces(bytes: Buffer, sizes: number[], reader = new OggPacketReader()): OggPacket[] {
  const out: OggPacket[] = [];
  let i = 0;
  for (let at = 0; at < bytes.length; i++) {
    const n = sizes[i % sizes.length] as number;
    out.push(...reader.push(bytes.subarray(at, at + n)));
    at += n;
  }
  reader.end();
  return out;
}

function badInput(pattern: RegExp): (e: unknown) => boolean {
  return (e: unknown) => e instanceof VoiceError && e.code === 'bad_input' && pattern.test(e.message);
}

const packets = [filled(10, 1), filled(300, 2), filled(0, 3), filled(255, 4), filled(1, 5)];

describe('OggPacketReader', () => {
  test("our muxer's file comes back packet for packet, in any split of its bytes", () => {
    const file = oggOpus(packets, { inputSampleRate: 24000 });
    for (const sizes of [[file.length], [1], [3, 5, 7], [27], [64, 1000]]) {
      const got = readInPieces(file, sizes);
      assert.equal(got.length, packets.length + 2, `split ${sizes}`);
      assert.equal(Buffer.from(got[0]!.data).toString('latin1', 0, 8), 'OpusHead');
      assert.deepEqual(
        got.map((p) => p.first),
        [true, false, false, false, false, false, false],
      );
      assert.deepEqual(
        got.slice(2).map((p) => Buffer.from(p.data)),
        packets,
        `split ${sizes}`,
      );
    }
  });

  test('a packet continued across pages is joined; a chained stream starts over with its own first packet', () => {
    const big = Buffer.concat([filled(255, 8), filled(255, 9), filled(10, 10)]);
    const stream = (serial: number): Buffer =>
      Buffer.concat([
        page({ body: filled(5, 1), lacing: [5], flags: 0x02, serial, sequence: 0 }),
        page({ body: big.subarray(0, 510), lacing: [255, 255], serial, sequence: 1 }),
        page({ body: big.subarray(510), lacing: [10], flags: 0x01 | 0x04, serial, sequence: 2 }),
      ]);
    const got = readInPieces(Buffer.concat([stream(1), stream(2)]), [13]);
    assert.deepEqual(
      got.map((p) => [p.first, p.data.byteLength]),
      [
        [true, 5],
        [false, 520],
        [true, 5],
        [false, 520],
      ],
    );
    assert.deepEqual(Buffer.from(got[1]!.data), big);
  });

  test('faults throw bad_input naming them', () => {
    const file = oggOpus(packets, { inputSampleRate: 24000 });
    const flipped = Buffer.from(file);
    flipped[file.length - 3]! ^= 0x40;
    assert.throws(() => readInPieces(flipped, [100]), badInput(/checksum/));
    assert.throws(
      () => new OggPacketReader().push(Buffer.from('ID3\u0004 not an ogg file at all, no')),
      badInput(/no page at byte 0/),
    );
    assert.throws(
      () => new OggPacketReader().push(Buffer.from('Og!')),
      badInput(/no page at byte 0/),
      'caught at once, not after 27 bytes',
    );
    assert.throws(
      () => readInPieces(file.subarray(0, file.length - 5), [file.length]),
      badInput(/ended inside a page/),
    );
    const version = Buffer.from(file);
    version[4] = 1;
    assert.throws(() => new OggPacketReader().push(version), badInput(/version 1/));
    const head = page({ body: filled(5, 1), lacing: [5], flags: 0x02, serial: 1 });
    assert.throws(
      () =>
        readInPieces(Buffer.concat([head, page({ body: filled(5, 1), lacing: [5], serial: 2, sequence: 1 })]), [999]),
      badInput(/another logical stream/),
    );
    assert.throws(
      () =>
        readInPieces(Buffer.concat([head, page({ body: filled(5, 1), lacing: [5], flags: 0x02, serial: 2 })]), [999]),
      badInput(/multiplexed/),
    );
    assert.throws(
      () => readInPieces(page({ body: filled(5, 1), lacing: [5], serial: 1 }), [999]),
      badInput(/no beginning-of-stream/),
    );
    assert.throws(
      () =>
        readInPieces(Buffer.concat([head, page({ body: filled(5, 1), lacing: [5], serial: 1, sequence: 3 })]), [999]),
      badInput(/out of sequence/),
    );
    assert.throws(
      () =>
        readInPieces(
          Buffer.concat([head, page({ body: filled(5, 1), lacing: [5], flags: 0x01, serial: 1, sequence: 1 })]),
          [999],
        ),
      badInput(/never started/),
    );
    const open = page({ body: filled(255, 1), lacing: [255], serial: 1, sequence: 1 });
    assert.throws(
      () =>
        readInPieces(
          Buffer.concat([head, open, page({ body: filled(5, 1), lacing: [5], serial: 1, sequence: 2 })]),
          [999],
        ),
      badInput(/left unfinished/),
    );
    assert.throws(() => readInPieces(Buffer.concat([head, open]), [999]), badInput(/inside a packet/));
    assert.throws(() => new OggPacketReader().end(), badInput(/no page/));
  });

  test('a packet over maxPacketBytes is refused while it is being assembled, not after', () => {
    const reader = new OggPacketReader({ maxPacketBytes: 600 });
    reader.push(page({ body: filled(5, 1), lacing: [5], flags: 0x02, serial: 1 }));
    reader.push(page({ body: filled(510, 1), lacing: [255, 255], serial: 1, sequence: 1 }));
    assert.throws(
      () => reader.push(page({ body: filled(510, 1), lacing: [255, 255], flags: 0x01, serial: 1, sequence: 2 })),
      badInput(/over 600 bytes/),
    );
  });
});
