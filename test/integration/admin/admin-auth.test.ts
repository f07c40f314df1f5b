/**
 * The admin API's credentials without a server: console sessions expire and are bounded, the
 * cookie carries the attributes that keep it from scripts and other sites, the token check
 * matches exactly, sign-in attempts are limited per address, and the token comes from
 * `admin.token` or ADMIN_TOKEN and is redacted like every configured secret.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AdminSessions, ADMIN_COOKIE, readCookie, sessionCookie } from '../../../features/admin/admin-sessions.ts';
import { bearerToken, tokenMatches } from '../../../features/admin/admin-token.ts';
import { SignInLimit } from '../../../features/admin/sign-in-limit.ts';
import { KnownClients, KNOWN_CLIENT_COOKIE } from '../../../features/admin/known-clients.ts';
import { ConfigError, loadConfig } from '../../../server/config.ts';
import { configSecrets } from '../../../core/config-secrets.ts';

describe('console sessions', () => {
  test('a session is valid until its expiry, then forgotten', () => {
    let now = 1_000_000;
    const s = new AdminSessions({ ttlMs: 60_000, max: 10, now: () => now });
    const { id, expiresAt } = s.create();
    assert.equal(expiresAt, 1_060_000);
    assert.match(id, /^[A-Za-z0-9_-]{43}$/, '32 random bytes, base64url');
    assert.equal(s.check(id), expiresAt);
    now += 59_999;
    assert.equal(s.check(id), expiresAt);
    now += 1;
    assert.equal(s.check(id), undefined);
    assert.equal(s.size, 0);
  });

  test('ended sessions and unknown ids are refused; ids are distinct', () => {
    const s = new AdminSessions({ ttlMs: 60_000, max: 10 });
    const a = s.create();
    const b = s.create();
    assert.notEqual(a.id, b.id);
    s.end(a.id);
    assert.equal(s.check(a.id), undefined);
    assert.notEqual(s.check(b.id), undefined);
    assert.equal(s.check('x'.repeat(43)), undefined);
  });

  test('beyond max the oldest sign-in is dropped', () => {
    const s = new AdminSessions({ ttlMs: 60_000, max: 3 });
    const ids = [s.create(), s.create(), s.create(), s.create()].map((x) => x.id);
    assert.equal(s.size, 3);
    assert.equal(s.check(ids[0] as string), undefined);
    for (const id of ids.slice(1)) assert.notEqual(s.check(id), undefined);
  });

  test('the cookie is HttpOnly, SameSite=Strict, Path=/, and Secure only over https', () => {
    const plain = sessionCookie('abc', 3600, false).split('; ');
    assert.deepEqual(plain, [`${ADMIN_COOKIE}=abc`, 'Path=/', 'HttpOnly', 'SameSite=Strict', 'Max-Age=3600']);
    assert.ok(sessionCookie('abc', 3600, true).split('; ').includes('Secure'));
    assert.ok(sessionCookie('', 0, false).includes('Max-Age=0'));
  });

  test('the cookie is read from a header holding several', () => {
    assert.equal(readCookie(`a=1; ${ADMIN_COOKIE}=xyz; b=2`, ADMIN_COOKIE), 'xyz');
    assert.equal(readCookie('a=1', ADMIN_COOKIE), undefined);
    assert.equal(readCookie(undefined, ADMIN_COOKIE), undefined);
  });
});

describe('admin token', () => {
  const token = 'a-long-admin-token-0123456789';
  test('only the exact token matches', () => {
    assert.equal(tokenMatches(token, token), true);
    assert.equal(tokenMatches(`${token}x`, token), false);
    assert.equal(tokenMatches(token.slice(0, -1), token), false);
    assert.equal(tokenMatches('', token), false);
    assert.equal(tokenMatches('', ''), false, 'no token configured: nothing matches');
  });
  test('the bearer token is taken from the Authorization header', () => {
    assert.equal(bearerToken(`Bearer ${token}`), token);
    assert.equal(bearerToken(`bearer ${token}`), token);
    assert.equal(bearerToken(`Basic ${token}`), undefined);
    assert.equal(bearerToken(undefined), undefined);
  });
});

describe('sign-in limit', () => {
  test('5 attempts per address, then refused until the bucket refills', () => {
    let now = 0;
    const limit = new SignInLimit({ burst: 5, perMinute: 5, now: () => now });
    for (let i = 0; i < 5; i++) assert.equal(limit.take('10.0.0.1'), true, `attempt ${i + 1}`);
    assert.equal(limit.take('10.0.0.1'), false);
    assert.equal(limit.take('10.0.0.2'), true, 'another address has its own budget');
    now += 11_000;
    assert.equal(limit.take('10.0.0.1'), false, 'one attempt per 12 s');
    now += 1_000;
    assert.equal(limit.take('10.0.0.1'), true);
    assert.equal(limit.retryAfterS, 12);
  });

  test('the map of addresses is bounded', () => {
    const limit = new SignInLimit({ burst: 1, perMinute: 1, maxAddresses: 2 });
    assert.equal(limit.take('a'), true);
    assert.equal(limit.take('a'), false);
    limit.take('b');
    limit.take('c');
    assert.equal(limit.take('a'), true, 'the oldest address was forgotten');
  });
});

describe('guesses and known clients', () => {
  test('attempt: compares only while guesses are left; a wrong one spends one, a right one none', () => {
    const limit = new SignInLimit({ burst: 2, perMinute: 1, now: () => 0 });
    let compared = 0;
    const right = () => (compared++, true);
    const wrong = () => (compared++, false);
    assert.equal(limit.attempt('a', right), 'match');
    assert.equal(limit.attempt('a', right), 'match');
    assert.equal(limit.attempt('a', right), 'match', 'right tokens spend nothing');
    assert.equal(limit.attempt('a', wrong), 'wrong');
    assert.equal(limit.attempt('a', wrong), 'wrong');
    assert.equal(compared, 5);
    assert.equal(limit.attempt('a', right), 'over');
    assert.equal(compared, 5, 'over the limit: not compared at all');
  });

  test('a known-client cookie is valid only under the token that issued it, and only unaltered', () => {
    const known = new KnownClients('a-long-admin-token-0123456789');
    const set = known.issue(false);
    const pair = set.split('; ')[0] as string;
    assert.ok(pair.startsWith(`${KNOWN_CLIENT_COOKIE}=`));
    assert.ok(set.split('; ').includes('Path=/api/admin'));
    const id = known.idOf(`other=1; ${pair}`);
    assert.match(id ?? '', /^[A-Za-z0-9_-]{22}$/);
    assert.equal(new KnownClients('another-admin-token-0123456789').idOf(pair), undefined, 'a new token voids it');
    const value = pair.slice(KNOWN_CLIENT_COOKIE.length + 1);
    const other = known.issue(false).split('; ')[0]?.split('.')[1] ?? '';
    assert.equal(
      known.idOf(`${KNOWN_CLIENT_COOKIE}=${value.split('.')[0]}.${other}`),
      undefined,
      'another id with this MAC',
    );
    assert.equal(known.idOf(`${KNOWN_CLIENT_COOKIE}=x`), undefined);
    assert.equal(known.idOf(undefined), undefined);
  });
});

describe('admin.token in the configuration', () => {
  test('ADMIN_TOKEN sets it, a short one is refused naming the key, and it is a secret for redaction', () => {
    const token = 'env-admin-token-0123456789';
    const cwd = mkdtempSync(join(tmpdir(), 'admin-config-'));
    after(() => rmSync(cwd, { recursive: true, force: true }));
    const loaded = loadConfig({ argv: [], env: { ADMIN_TOKEN: token }, cwd });
    assert.equal(loaded.config.admin.token, token);
    assert.ok(loaded.overrides.includes('ADMIN_TOKEN'));
    assert.equal(loadConfig({ argv: [], env: {}, cwd }).config.admin.token, '', 'off by default');
    assert.throws(
      () => loadConfig({ argv: [], env: { ADMIN_TOKEN: 'short' }, cwd }),
      (err: Error) => err instanceof ConfigError && /admin\.token: must be at least 16 characters/.test(err.message),
    );
    assert.ok(configSecrets(loaded.config).some((s) => s.path === 'admin.token' && s.value === token));
  });
});
