/**
 * A stranger inventing fresh Device-Id/Client-Id pairs on every OTA request: once the pending codes
 * are at their cap, the registry file is not written again (each write is a locked read, a write
 * and a rename), and codes that expire make room again.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JsonDeviceRegistry, MAX_PENDING } from '../../../server/identity/json-device-registry.ts';

/** A distinct well-formed MAC for each number. */
const mac = (prefix: string, i: number): string => `${prefix}:00:00:00:${(i >> 8).toString(16).padStart(2, '0')}:${(i & 255).toString(16).padStart(2, '0')}`;

test('a full pending list answers new strangers without writing the file; expiry makes room', () => {
  const dir = mkdtempSync(join(tmpdir(), 'registry-'));
  try {
    let now = 1_000_000;
    const file = join(dir, 'devices.json');
    const reg = new JsonDeviceRegistry({ file, secret: '', codeTtlMs: 60_000, watchIntervalMs: 0, now: () => now });
    for (let i = 0; i < MAX_PENDING; i++) assert.ok(reg.pendingCode(mac('02', i), `client-${i}`), `code ${i}`);
    // Every write replaces the file by rename: a new file with its own change time (in ns).
    const stamp = statSync(file, { bigint: true }).ctimeNs;
    for (let i = 0; i < 200; i++) assert.equal(reg.pendingCode(mac('03', i), `stranger-${i}`), null);
    assert.equal(statSync(file, { bigint: true }).ctimeNs, stamp, 'no write while the pending list is full');
    // A device already waiting still gets its code back (no write either).
    assert.ok(reg.pendingCode(mac('02', 7), 'client-7'));
    now += 61_000;
    assert.match(reg.pendingCode('04:00:00:00:00:01', 'late-comer')?.code ?? '', /^\d{6}$/, 'expired codes made room');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
