import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createOpusCodec } from '../../../audio/opus/codec.ts';
import {
  aesCtr,
  decodeUdpHeader,
  encodeUdpHeader,
  openUdpPacket,
  opusPacketMs,
  parseUdpDatagram,
  plausibleOpusFrame,
  sealUdpPacket,
  UDP_HEADER_BYTES,
} from '../../../protocol/udp-packet.ts';

const hex = (s: string): Buffer => Buffer.from(s.replaceAll(' ', ''), 'hex');

describe('UDP audio packet', () => {
  test('AES-128-CTR matches NIST SP 800-38A F.5.1, the counter carrying across the block boundary', () => {
    const key = hex('2b7e151628aed2a6abf7158809cf4f3c');
    const iv = hex('f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff');
    const plain = hex('6bc1bee22e409f96e93d7e117393172a ae2d8a571e03ac9c9eb76fac45af8e51');
    const cipher = aesCtr(key, iv, plain);
    assert.equal(cipher.toString('hex'), '874d6191b620e3261bef6864990db6ce9806f66b7970fdff8617187bb9fffdff');
    assert.deepEqual(aesCtr(key, iv, cipher), plain);
  });

  test('header layout: type, flags, u16 length, ssrc, timestamp, sequence, big-endian', () => {
    const h = {
      type: 1,
      flags: 0x22,
      payloadLength: 0x0102,
      ssrc: 0xa1b2c3d4,
      timestamp: 0x01020304,
      sequence: 0xfffffffe,
    };
    const b = encodeUdpHeader(h);
    assert.equal(b.toString('hex'), '01220102a1b2c3d401020304fffffffe');
    assert.deepEqual(decodeUdpHeader(b), h);
    assert.equal(decodeUdpHeader(b.subarray(0, 15)), null);
  });

  test('a datagram built the firmware way (nonce copied, bytes 2-3 and 8-15 overwritten) opens with the session key', () => {
    const key = hex('00112233445566778899aabbccddeeff');
    const nonce = hex('01000000deadbeef0000000000000000');
    const opus = Buffer.from('an opus frame, or so we pretend');
    const header = Buffer.from(nonce);
    header.writeUInt16BE(opus.length, 2);
    header.writeUInt32BE(960, 8);
    header.writeUInt32BE(1, 12);
    const datagram = Buffer.concat([header, aesCtr(key, header, opus)]);
    const r = openUdpPacket(key, datagram);
    assert.ok(r.ok);
    assert.deepEqual(r.payload, opus);
    assert.equal(r.header.ssrc, 0xdeadbeef);
    assert.equal(r.header.sequence, 1);
    assert.equal(r.header.timestamp, 960);
    // The same bytes as our own sealing with that header.
    assert.deepEqual(
      sealUdpPacket(key, { type: 1, flags: 0, ssrc: 0xdeadbeef, timestamp: 960, sequence: 1 }, opus),
      datagram,
    );
  });

  test('shape checks: short, wrong type, length not matching the datagram', () => {
    const key = Buffer.alloc(16, 7);
    const good = sealUdpPacket(key, { type: 1, flags: 0, ssrc: 5, timestamp: 0, sequence: 1 }, Buffer.from([1, 2, 3]));
    assert.equal(good.length, UDP_HEADER_BYTES + 3);
    assert.ok(parseUdpDatagram(good).ok);
    assert.deepEqual(parseUdpDatagram(good.subarray(0, 10)), { ok: false, reason: 'short' });
    const wrongType = Buffer.from(good);
    wrongType[0] = 2;
    assert.deepEqual(parseUdpDatagram(wrongType), { ok: false, reason: 'type' });
    assert.deepEqual(parseUdpDatagram(Buffer.concat([good, Buffer.from([0])])), { ok: false, reason: 'length' });
    assert.deepEqual(parseUdpDatagram(good.subarray(0, good.length - 1)), { ok: false, reason: 'length' });
    // An empty payload is a well-formed datagram.
    assert.ok(
      parseUdpDatagram(sealUdpPacket(key, { type: 1, flags: 0, ssrc: 5, timestamp: 0, sequence: 2 }, Buffer.alloc(0)))
        .ok,
    );
  });

  test('a datagram opened with the wrong key is not a plausible frame', async () => {
    const codec = await createOpusCodec({ sampleRate: 16000 });
    try {
      const pcm = new Int16Array(codec.frameSamples);
      for (let i = 0; i < pcm.length; i++) pcm[i] = Math.round(8000 * Math.sin(i / 5));
      const frame = Buffer.from(codec.encode(pcm));
      assert.equal(opusPacketMs(frame), 60);
      assert.ok(plausibleOpusFrame(frame, 60));
      assert.ok(!plausibleOpusFrame(frame, 20));
      const key = Buffer.alloc(16, 1);
      let plausible = 0;
      for (let seq = 1; seq <= 200; seq++) {
        const d = sealUdpPacket(key, { type: 1, flags: 0, ssrc: 9, timestamp: seq * 60, sequence: seq }, frame);
        const wrong = openUdpPacket(Buffer.alloc(16, 2), d);
        assert.ok(wrong.ok);
        if (plausibleOpusFrame(wrong.payload, 60)) plausible++;
        const right = openUdpPacket(key, d);
        assert.ok(right.ok && plausibleOpusFrame(right.payload, 60));
      }
      // Noise passes the TOC check about one time in twenty; never most of the time.
      assert.ok(plausible < 40, `wrong key passed ${plausible} of 200`);
    } finally {
      codec.close();
    }
  });

  test('Opus durations from the TOC: codes 0-3, and what cannot be Opus', () => {
    assert.equal(opusPacketMs(Buffer.from([(11 << 3) | 0])), 60); // SILK WB 60 ms, one frame
    assert.equal(opusPacketMs(Buffer.from([(31 << 3) | 3, 3])), 60); // CELT FB 20 ms x 3
    assert.equal(opusPacketMs(Buffer.from([(9 << 3) | 1])), 40); // two 20 ms frames
    assert.equal(opusPacketMs(Buffer.from([(11 << 3) | 3, 0])), null); // code 3 with no frames
    assert.equal(opusPacketMs(Buffer.from([(11 << 3) | 3, 3])), null); // 180 ms: over the limit
    assert.equal(opusPacketMs(Buffer.alloc(0)), null);
    assert.ok(!plausibleOpusFrame(Buffer.from([(11 << 3) | 0x04]), 60)); // stereo
  });
});
