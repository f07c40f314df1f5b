/** The two upgrade budgets per address: anonymous shared, credentialed per device; both bounded. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PerIpLimits } from '../../../core/per-ip-limits.ts';

const RATE = { perSecond: 0.001, burst: 2 };
const takes = (n: number, f: () => boolean): boolean[] => Array.from({ length: n }, f);

test('an address spent by anonymous upgrades still admits its credentialed devices, each on its own budget', () => {
  const l = new PerIpLimits(RATE);
  assert.deepEqual(
    takes(3, () => l.takeUpgrade('198.51.100.1')),
    [true, true, false],
  );
  assert.deepEqual(
    takes(3, () => l.takeAuthenticatedUpgrade('198.51.100.1', 'dev-a')),
    [true, true, false],
  );
  assert.equal(l.takeAuthenticatedUpgrade('198.51.100.1', 'dev-b'), true);
  assert.equal(l.takeUpgrade('198.51.100.2'), true, 'another address has its own anonymous budget');
  assert.equal(l.takeUpgrade('198.51.100.1'), false, 'credentialed upgrades gave the anonymous budget nothing back');
});

test('the credentialed map is bounded: the least recently used are forgotten first', () => {
  const l = new PerIpLimits(RATE, 10);
  assert.deepEqual(
    takes(3, () => l.takeAuthenticatedUpgrade('a', 'kept')),
    [true, true, false],
  );
  for (let i = 0; i < 8; i++) l.takeAuthenticatedUpgrade('a', `other-${i}`);
  assert.equal(l.takeAuthenticatedUpgrade('a', 'kept'), false, 'recently used: still spent');
  for (let i = 8; i < 30; i++) l.takeAuthenticatedUpgrade('a', `other-${i}`);
  assert.equal(l.takeAuthenticatedUpgrade('a', 'kept'), true, 'forgotten after many newer ones: a fresh budget');
});

test('sessions count per address and are released', () => {
  const l = new PerIpLimits(RATE);
  l.opened('x');
  l.opened('x');
  assert.equal(l.sessions('x'), 2);
  l.closed('x');
  assert.equal(l.sessions('x'), 1);
  assert.equal(l.sessions('y'), 0);
});
