/**
 * The address guard refuses the IPv6 and IPv4 ranges that reach a private network by a detour:
 * site-local IPv6, 6to4 and its relay anycast, Teredo, and the local-use NAT64 prefix. Each form is
 * checked by `isPublicAddress` and through `resolveChecked`, with and without private addresses
 * allowed (a LAN music server): when allowed, they pass like any other private address.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { LookupAddress } from 'node:dns';
import { isPublicAddress, resolveChecked } from '../../../mcp/local-tools/address-guard.ts';

/** Each refused form, named by what it is. 6to4 and Teredo are refused whole, whatever IPv4 they carry. */
const DETOURS: Record<string, string[]> = {
  'site-local fec0::/10': ['fec0::1', 'feff:ffff::1'],
  '6to4 2002::/16 (here carrying 169.254.169.254, 127.0.0.1 and 8.8.8.8)': [
    '2002:a9fe:a9fe::1',
    '2002:7f00:1::',
    '2002:808:808::1',
  ],
  'local-use NAT64 64:ff9b:1::/48': ['64:ff9b:1::a9fe:a9fe', '64:ff9b:1::169.254.169.254', '64:ff9b:1:ffff::1'],
  'Teredo 2001::/32': ['2001:0:4136:e378:8000:63bf:3fff:fdd2', '2001::1', '2001:0:ffff::1'],
  '6to4 relay anycast 192.88.99.0/24': ['192.88.99.1', '192.88.99.255'],
  '6to4 relay anycast, IPv4-mapped': ['::ffff:192.88.99.1', '::ffff:c058:6301', '0:0:0:0:0:ffff:c058:6301'],
  '6to4 relay anycast, through the NAT64 well-known prefix': ['64:ff9b::192.88.99.1', '64:ff9b::c058:6301'],
};

/** Public neighbours of those ranges, which must stay reachable. */
const PUBLIC_NEIGHBOURS = [
  '2001:4860:4860::8888',
  '2001:1::1',
  '2003::1',
  '2001:db9::1',
  '192.88.98.1',
  '192.88.100.1',
  '::ffff:192.88.100.1',
];

const resolvesTo = (ip: string) => async (): Promise<LookupAddress[]> => [
  { address: ip, family: ip.includes(':') ? 6 : 4 },
];

describe('address guard: ranges that detour to a private network', () => {
  for (const [form, ips] of Object.entries(DETOURS)) {
    test(`${form} is not public`, () => {
      for (const ip of ips) assert.equal(isPublicAddress(ip), false, ip);
    });

    test(`${form} is refused when resolved, and allowed with private addresses allowed`, async () => {
      for (const ip of ips) {
        const denied = await resolveChecked('music.example', { allowPrivate: false, resolve: resolvesTo(ip) });
        assert.ok(!denied.ok && denied.reason.includes(ip), `${ip}: ${JSON.stringify(denied)}`);
        const literal = await resolveChecked(ip.includes(':') ? `[${ip}]` : ip, { allowPrivate: false });
        assert.equal(literal.ok, false, `literal ${ip}`);
        const allowed = await resolveChecked('music.example', { allowPrivate: true, resolve: resolvesTo(ip) });
        assert.deepEqual(allowed, { ok: true, addresses: [{ address: ip, family: ip.includes(':') ? 6 : 4 }] }, ip);
      }
    });
  }

  test('the public addresses next to those ranges stay public', async () => {
    for (const ip of PUBLIC_NEIGHBOURS) {
      assert.equal(isPublicAddress(ip), true, ip);
      const r = await resolveChecked('music.example', { allowPrivate: false, resolve: resolvesTo(ip) });
      assert.equal(r.ok, true, ip);
    }
  });
});
