import { test } from 'node:test';
import assert from 'node:assert/strict';
import { VisionTokens } from '../../../../features/vision/tokens.ts';

function tokens(now: { t: number }, maxTokens = 100) {
  return new VisionTokens({ maxAgeMs: 60_000, maxTokens, now: () => now.t });
}

test('a minted token is accepted for its own device only, until revoked', () => {
  const now = { t: 1000 };
  const t = tokens(now);
  const minted = t.mint({ sessionId: 's1', deviceId: 'aa:bb:cc:dd:ee:01', clientId: 'c1' });
  assert.match(minted.token, /^[A-Za-z0-9_-]{32,}$/);
  const ok = t.check(minted.token, 'AA:BB:CC:DD:EE:01');
  assert.equal(ok.ok, true);
  assert.equal(ok.ok && ok.grant.sessionId, 's1');
  assert.deepEqual(t.check(minted.token, 'aa:bb:cc:dd:ee:02'), { ok: false, reason: 'other_device' });
  assert.deepEqual(t.check(minted.token, null), { ok: false, reason: 'other_device' });
  minted.revoke();
  assert.deepEqual(t.check(minted.token, 'aa:bb:cc:dd:ee:01'), { ok: false, reason: 'unknown' });
  assert.equal(t.size, 0);
});

test('a token past its max age is refused as expired and forgotten', () => {
  const now = { t: 1000 };
  const t = tokens(now);
  const minted = t.mint({ sessionId: 's1', deviceId: 'd1', clientId: null });
  now.t += 59_999;
  assert.equal(t.check(minted.token, 'd1').ok, true);
  now.t += 2;
  assert.deepEqual(t.check(minted.token, 'd1'), { ok: false, reason: 'expired' });
  assert.equal(t.size, 0);
});

test('an unknown or empty token is refused', () => {
  const t = tokens({ t: 0 });
  assert.deepEqual(t.check('', 'd1'), { ok: false, reason: 'missing' });
  assert.deepEqual(t.check('nope', 'd1'), { ok: false, reason: 'unknown' });
});

test('tokens are bounded: past the bound the oldest is dropped', () => {
  const now = { t: 0 };
  const t = tokens(now, 3);
  const all = [1, 2, 3, 4].map((i) => t.mint({ sessionId: `s${i}`, deviceId: `d${i}`, clientId: null }));
  assert.equal(t.size, 3);
  assert.deepEqual(t.check(all[0]!.token, 'd1'), { ok: false, reason: 'unknown' });
  assert.equal(t.check(all[3]!.token, 'd4').ok, true);
  // Revoking an evicted token is harmless; revoking twice too.
  all[0]!.revoke();
  all[3]!.revoke();
  all[3]!.revoke();
  assert.equal(t.size, 2);
});

test('each session gets a token of its own, reported to the secret sink', () => {
  const seen: string[] = [];
  const t = new VisionTokens({ maxAgeMs: 60_000, maxTokens: 10, onSecret: (v) => seen.push(v) });
  const a = t.mint({ sessionId: 's1', deviceId: 'd1', clientId: null });
  const b = t.mint({ sessionId: 's2', deviceId: 'd1', clientId: null });
  assert.notEqual(a.token, b.token);
  assert.deepEqual(seen, [a.token, b.token]);
});
