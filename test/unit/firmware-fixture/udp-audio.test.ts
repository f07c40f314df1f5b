/**
 * The simulated firmware's datagram code checked on its own: its AES-128-CTR against the NIST
 * vectors and OpenSSL's CTR, the header it builds from the nonce, and the receive checks in the
 * firmware's order.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createCipheriv, randomBytes } from 'node:crypto';
import {
  aesCtr,
  decodeHex,
  DownlinkReceiver,
  HEADER_BYTES,
  readHeader,
  sealUplink,
} from '../../fixtures/firmware/udp-audio.ts';
import { brokerAddress } from '../../fixtures/firmware/ota.ts';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');
const opensslCtr = (key: Uint8Array, iv: Uint8Array, data: Uint8Array): Buffer => {
  const c = createCipheriv('aes-128-ctr', key, iv);
  return Buffer.concat([c.update(data), c.final()]);
};

/** A server-side datagram built with OpenSSL's CTR (what the server's codec does independently). */
function serverDatagram(key: Buffer, nonce: Buffer, payload: Buffer, sequence: number, timestamp = 0): Buffer {
  const header = Buffer.from(nonce);
  header.writeUInt16BE(payload.length, 2);
  header.writeUInt32BE(timestamp, 8);
  header.writeUInt32BE(sequence, 12);
  return Buffer.concat([header, opensslCtr(key, header, payload)]);
}

describe('firmware fixture: AES-128-CTR', () => {
  test('NIST SP 800-38A F.5.1 CTR-AES128 (the counter carries across bytes 14 and 15)', () => {
    const key = hex('2b7e151628aed2a6abf7158809cf4f3c');
    const iv = hex('f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff');
    const plain = hex(`6bc1bee22e409f96e93d7e117393172a ae2d8a571e03ac9c9eb76fac45af8e51
                       30c81c46a35ce411e5fbc1191a0a52ef f69f2445df4f9b17ad2b417be66c3710`);
    const cipher = hex(`874d6191b620e3261bef6864990db6ce 9806f66b7970fdff8617187bb9fffdff
                        5ae4df3edbd5d35e5b4f09020db03eab 1e031dda2fbe03d1792170a0f3009cee`);
    assert.deepEqual(aesCtr(key, iv, plain), cipher);
    assert.deepEqual(aesCtr(key, iv, cipher), plain);
    // A partial last block uses the head of its keystream block.
    assert.deepEqual(aesCtr(key, iv, plain.subarray(0, 37)), cipher.subarray(0, 37));
  });

  test('equals OpenSSL aes-128-ctr for random keys, lengths and counters that carry over 32-bit words', () => {
    for (let i = 0; i < 200; i++) {
      const key = randomBytes(16);
      const iv = randomBytes(16);
      // Every fourth case ends in ff bytes so that the 128-bit increment carries into the ssrc/flags bytes.
      if (i % 4 === 0) iv.fill(0xff, 4 + (i % 12));
      const data = randomBytes(i * 7);
      assert.deepEqual(aesCtr(key, iv, data), opensslCtr(key, iv, data), `case ${i}`);
    }
  });

  test('the uplink header keeps bytes 0-1 and 4-7 of the nonce and decrypts with the server side', () => {
    const key = randomBytes(16);
    const nonce = Buffer.concat([Buffer.from([0x01, 0x00]), randomBytes(14)]);
    const payload = randomBytes(123);
    const d = sealUplink(key, nonce, payload, 0xdeadbeef, 7);
    assert.equal(d.length, HEADER_BYTES + 123);
    assert.deepEqual(d.subarray(0, 2), nonce.subarray(0, 2));
    assert.deepEqual(d.subarray(4, 8), nonce.subarray(4, 8));
    assert.deepEqual(readHeader(d), {
      type: 1,
      flags: 0,
      payloadLen: 123,
      ssrc: nonce.readUInt32BE(4),
      timestamp: 0xdeadbeef,
      sequence: 7,
    });
    assert.deepEqual(opensslCtr(key, d.subarray(0, 16), d.subarray(16)), payload);
    assert.throws(() => sealUplink(key, nonce.subarray(0, 15), payload, 0, 1));
  });

  test('hex as DecodeHexString reads it', () => {
    assert.deepEqual(decodeHex('0aFf'), Buffer.from([0x0a, 0xff]));
    assert.equal(decodeHex('abc'), null);
    assert.equal(decodeHex('zz'), null);
  });
});

describe('firmware fixture: downlink checks in the firmware order', () => {
  const key = randomBytes(16);
  const nonce = Buffer.concat([Buffer.from([0x01, 0x00]), randomBytes(14)]);
  const frame = randomBytes(80);

  test('accepts newer sequences, decrypts, counts a gap, drops old and repeated ones', () => {
    const rx = new DownlinkReceiver(key);
    // remote_sequence_ starts at 0: a sequence 0 is "not newer".
    assert.deepEqual(rx.accept(serverDatagram(key, nonce, frame, 0)), { ok: false, reason: 'old' });
    const first = rx.accept(serverDatagram(key, nonce, frame, 1));
    assert.ok(first.ok);
    assert.deepEqual(first.payload, frame);
    assert.equal(first.gap, false);
    const skipped = rx.accept(serverDatagram(key, nonce, frame, 3));
    assert.ok(skipped.ok && skipped.gap);
    assert.deepEqual(rx.accept(serverDatagram(key, nonce, frame, 3)), { ok: false, reason: 'old' });
    assert.deepEqual(rx.accept(serverDatagram(key, nonce, frame, 2)), { ok: false, reason: 'old' });
    assert.equal(rx.remoteSequence, 3);
    // Unsigned: 0x80000000 is newer than 3.
    assert.ok(rx.accept(serverDatagram(key, nonce, frame, 0x8000_0000)).ok);
  });

  test('short, wrong type and wrong size are dropped before the sequence is looked at', () => {
    const rx = new DownlinkReceiver(key);
    assert.deepEqual(rx.accept(Buffer.alloc(15, 1)), { ok: false, reason: 'short' });
    const wrongType = serverDatagram(key, nonce, frame, 5);
    wrongType[0] = 0x02;
    assert.deepEqual(rx.accept(wrongType), { ok: false, reason: 'type' });
    const good = serverDatagram(key, nonce, frame, 5);
    assert.deepEqual(rx.accept(Buffer.concat([good, Buffer.alloc(1)])), { ok: false, reason: 'size' });
    assert.deepEqual(rx.accept(good.subarray(0, good.length - 1)), { ok: false, reason: 'size' });
    assert.equal(rx.remoteSequence, 0, 'no drop moved the sequence');
    // A header-only datagram with payload_len 0 is a valid (empty) packet.
    assert.ok(rx.accept(serverDatagram(key, nonce, Buffer.alloc(0), 6)).ok);
  });

  test('a wrong key passes the checks and decrypts to noise (the firmware has no authentication)', () => {
    const rx = new DownlinkReceiver(key);
    const v = rx.accept(serverDatagram(randomBytes(16), nonce, frame, 1));
    assert.ok(v.ok);
    assert.notDeepEqual(v.payload, frame);
  });
});

describe('firmware fixture: broker endpoint', () => {
  test('port from the endpoint, 8883 by default, TLS exactly on 8883', () => {
    assert.deepEqual(brokerAddress('127.0.0.1:1883'), { host: '127.0.0.1', port: 1883, tls: false });
    assert.deepEqual(brokerAddress('mqtt.example.com'), { host: 'mqtt.example.com', port: 8883, tls: true });
    assert.deepEqual(brokerAddress('h:8883'), { host: 'h', port: 8883, tls: true });
    assert.throws(() => brokerAddress('h:x'));
  });
});
