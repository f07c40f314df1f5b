/**
 * The key per-address limits count by, per form: IPv4, IPv4-mapped IPv6 in both notations, IPv6 by
 * prefix, zones and brackets, and X-Forwarded-For believed only from a trusted proxy (the rightmost
 * entry that is not itself a trusted proxy).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { AddressKeys } from '../../../core/address-key.ts';
import { formatIp, inRange, isLoopback, parseIp, parseRange } from '../../../core/ip-address.ts';

const keys = new AddressKeys({ trustProxy: [], ipv6PrefixLength: 64 });

describe('address forms', () => {
  test('IPv4 is its own key', () => {
    assert.equal(keys.key('203.0.113.7', undefined), '203.0.113.7');
    assert.notEqual(keys.key('203.0.113.7', undefined), keys.key('203.0.113.8', undefined));
  });

  test('IPv4-mapped IPv6 (dotted or hex) and the IPv4 address share one key', () => {
    assert.equal(keys.key('::ffff:127.0.0.1', undefined), keys.key('127.0.0.1', undefined));
    assert.equal(keys.key('::ffff:7f00:1', undefined), '127.0.0.1');
    assert.equal(keys.key('::FFFF:203.0.113.7', undefined), '203.0.113.7');
  });

  test('two addresses in one /64 share a key; two /64s do not', () => {
    const a = keys.key('2001:db8:1:2::1', undefined);
    assert.equal(a, '2001:db8:1:2::/64');
    assert.equal(keys.key('2001:db8:1:2:ffff:ffff:ffff:fffe', undefined), a);
    assert.notEqual(keys.key('2001:db8:1:3::1', undefined), a);
  });

  test('the prefix length is configurable: /48 joins sibling /64s, /128 keeps whole addresses', () => {
    const by48 = new AddressKeys({ trustProxy: [], ipv6PrefixLength: 48 });
    assert.equal(by48.key('2001:db8:1:2::1', undefined), by48.key('2001:db8:1:3::1', undefined));
    assert.equal(by48.key('2001:db8:1:2::1', undefined), '2001:db8:1::/48');
    const by128 = new AddressKeys({ trustProxy: [], ipv6PrefixLength: 128 });
    assert.notEqual(by128.key('2001:db8::1', undefined), by128.key('2001:db8::2', undefined));
    assert.equal(by128.key('2001:DB8:0:0::1', undefined), '2001:db8::1');
    const by60 = new AddressKeys({ trustProxy: [], ipv6PrefixLength: 60 });
    assert.equal(by60.key('2001:db8:0:1f::1', undefined), '2001:db8:0:10::/60');
  });

  test('zones and brackets do not make a new key; loopback ::1 has one', () => {
    assert.equal(keys.key('fe80::1%eth0', undefined), keys.key('fe80::2', undefined));
    assert.equal(keys.key('[2001:db8::1]', undefined), keys.key('2001:db8::5', undefined));
    assert.equal(keys.key('::1', undefined), '::/64');
  });

  test('a missing or unreadable peer address has one shared key', () => {
    assert.equal(keys.key(undefined, undefined), 'unknown');
    assert.equal(keys.key('not an address', undefined), 'unknown');
  });
});

describe('X-Forwarded-For', () => {
  const behind = new AddressKeys({ trustProxy: ['10.0.0.0/8', '2001:db8:ffff::1'], ipv6PrefixLength: 64 });

  test('from a peer that is not a trusted proxy it is ignored', () => {
    assert.equal(keys.key('198.51.100.9', '203.0.113.1'), '198.51.100.9');
    assert.equal(behind.key('198.51.100.9', '203.0.113.1'), '198.51.100.9');
  });

  test('from a trusted proxy the rightmost untrusted entry is the client', () => {
    assert.equal(behind.key('10.0.0.2', '203.0.113.1'), '203.0.113.1');
    // The client sent its own X-Forwarded-For (spoofed, left) through two of our proxies.
    assert.equal(behind.key('10.0.0.2', '192.0.2.66, 203.0.113.1, 10.1.1.1'), '203.0.113.1');
    assert.equal(behind.key('10.0.0.2', ['192.0.2.66', '203.0.113.1']), '203.0.113.1');
    assert.equal(behind.key('::ffff:10.0.0.2', '203.0.113.1'), '203.0.113.1', 'a mapped peer matches an IPv4 range');
    assert.equal(behind.key('2001:db8:ffff::1', '198.51.100.20'), '198.51.100.20', 'an IPv6 proxy');
  });

  test('IPv6 clients behind a trusted proxy are counted by /64, mapped ones as IPv4', () => {
    assert.equal(behind.key('10.0.0.2', '2001:db8:5:6::1'), behind.key('10.0.0.2', '2001:db8:5:6::abcd'));
    assert.notEqual(behind.key('10.0.0.2', '2001:db8:5:6::1'), behind.key('10.0.0.2', '2001:db8:5:7::1'));
    assert.equal(behind.key('10.0.0.2', '::ffff:203.0.113.1'), '203.0.113.1');
  });

  test('entries with ports and brackets are read; garbage keeps the proxy that wrote it', () => {
    assert.equal(behind.key('10.0.0.2', '203.0.113.1:4711'), '203.0.113.1');
    assert.equal(behind.key('10.0.0.2', '[2001:db8:5:6::1]:443'), '2001:db8:5:6::/64');
    assert.equal(behind.key('10.0.0.2', 'unknown'), '10.0.0.2');
    assert.equal(behind.key('10.0.0.2', '203.0.113.1, garbage, 10.0.0.3'), '10.0.0.3');
  });

  test('only trusted proxies in the chain: the leftmost one', () => {
    assert.equal(behind.key('10.0.0.2', '10.0.0.9'), '10.0.0.9');
    assert.equal(behind.key('10.0.0.2', ''), '10.0.0.2');
  });

  test('a malformed trustProxy entry is an error at start', () => {
    assert.throws(() => new AddressKeys({ trustProxy: ['10.0.0.0/33'], ipv6PrefixLength: 64 }), /server\.trustProxy/);
  });
});

describe('ip-address', () => {
  test('ranges: IPv4, IPv6, single addresses and IPv4-mapped ranges', () => {
    const ip = (s: string) => parseIp(s)!;
    assert.ok(inRange(ip('10.200.3.4'), parseRange('10.0.0.0/8')!));
    assert.ok(!inRange(ip('11.0.0.1'), parseRange('10.0.0.0/8')!));
    assert.ok(inRange(ip('::ffff:10.1.2.3'), parseRange('::ffff:10.0.0.0/104')!));
    assert.ok(inRange(ip('2001:db8::77'), parseRange('2001:db8::/32')!));
    assert.ok(!inRange(ip('2001:db9::77'), parseRange('2001:db8::/32')!));
    assert.ok(inRange(ip('192.0.2.1'), parseRange('192.0.2.1')!));
    assert.ok(!inRange(ip('192.0.2.1'), parseRange('::/0')!), 'families do not mix');
    for (const bad of ['10.0.0.0/33', '2001:db8::/129', 'example.org', '10.0.0.0/x', ''])
      assert.equal(parseRange(bad), null, bad);
  });

  test('loopback: 127.0.0.0/8, mapped, ::1', () => {
    for (const s of ['127.0.0.1', '127.5.6.7', '::ffff:127.0.0.1', '::1', '[::1]'])
      assert.ok(isLoopback(parseIp(s)!), s);
    for (const s of ['128.0.0.1', '::2', '10.0.0.1']) assert.ok(!isLoopback(parseIp(s)!), s);
  });

  test('canonical IPv6 text', () => {
    assert.equal(formatIp(parseIp('2001:0db8:0000:0000:0001:0000:0000:0001')!), '2001:db8::1:0:0:1');
    assert.equal(formatIp(parseIp('::')!), '::');
    assert.equal(formatIp(parseIp('1:2:3:4:5:6:7:8')!), '1:2:3:4:5:6:7:8');
    assert.equal(formatIp(parseIp('1:0:3:4:5:6:7:8')!), '1:0:3:4:5:6:7:8');
  });
});
