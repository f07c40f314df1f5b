/**
 * A registry file holding what it should not (malformed or oversized identities, more than the
 * read limit): the registry still opens, drops the bad rows, keeps the good ones, and moves an
 * oversize file aside instead of refusing to start. Also: each binding has its own generation.
 */
import { afterEach, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JsonDeviceRegistry, type RegistryLog } from '../../../server/identity/json-device-registry.ts';
import { deviceToken } from '../../../server/identity/device-token.ts';

const SECRET = 's'.repeat(43);
const GOOD = { id: '0123456789', deviceId: 'a0:b1:c2:d3:e4:f5', clientId: '6f1c1d2e-1111-4222-8333-444455556666', boundAt: '2026-01-01T00:00:00.000Z' };
const PENDING_OK = { code: '123456', deviceId: 'a0:b1:c2:d3:e4:01', clientId: 'c-1', expiresAt: 9e12 };

let dir: string;
let file: string;
let logged: Array<{ level: string; obj: Record<string, unknown>; msg: string }>;
const log: RegistryLog = {
  warn: (obj: object | string, msg?: string) => logged.push({ level: 'warn', obj: obj as Record<string, unknown>, msg: msg ?? '' }),
  error: (obj: object | string, msg?: string) => logged.push({ level: 'error', obj: obj as Record<string, unknown>, msg: msg ?? '' }),
};
const open = (): JsonDeviceRegistry => new JsonDeviceRegistry({ file, secret: '', codeTtlMs: 60_000, watchIntervalMs: 0, log });

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'registry-repair-'));
  file = join(dir, 'devices.json');
  logged = [];
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

test('malformed rows are purged with a warning and the good ones kept', () => {
  const huge = 'a'.repeat(125 * 1024);
  writeFileSync(
    file,
    JSON.stringify({
      version: 1,
      secret: SECRET,
      devices: [GOOD, { ...GOOD, id: 'abcdefabcd', deviceId: huge }, { ...GOOD, id: 'abcdefabce', deviceId: 'not-a-mac' }, { ...GOOD, id: 'abcdefabcf', clientId: huge }, 'junk'],
      pending: [PENDING_OK, { ...PENDING_OK, code: '654321', deviceId: huge, clientId: huge }],
    }),
  );
  const reg = open();
  try {
    const { bound, pending } = reg.list();
    assert.deepEqual(bound.map((d) => d.id), [GOOD.id]);
    assert.deepEqual(pending.map((p) => p.code), [PENDING_OK.code]);
    assert.ok(reg.isBound(GOOD.deviceId, GOOD.clientId));
    assert.equal(reg.secret(), SECRET, 'the secret (and so every token) survives the repair');
    assert.ok(statSync(file).size < 4096, 'the file is rewritten without the bad rows');
    const warn = logged.find((l) => l.level === 'warn');
    assert.equal(warn?.obj.dropped, 5);
    assert.equal(warn?.obj.file, file);
  } finally {
    reg.close();
  }
});

test('a file past the read limit does not stop the start: moved aside with an error, its good rows kept', () => {
  const huge = 'b'.repeat(125 * 1024);
  const bad = Array.from({ length: 40 }, (_, i) => ({ ...PENDING_OK, code: String(100000 + i), deviceId: `${huge}${i}`, clientId: `${huge}${i}` }));
  writeFileSync(file, JSON.stringify({ version: 1, secret: SECRET, devices: [GOOD], pending: bad }));
  const size = statSync(file).size;
  assert.ok(size > 8 * 1024 * 1024);
  const reg = open();
  try {
    assert.ok(reg.isBound(GOOD.deviceId, GOOD.clientId), 'the bound device is kept');
    assert.equal(reg.secret(), SECRET);
    assert.equal(reg.list().pending.length, 0);
    assert.ok(statSync(file).size < 4096);
    const aside = readdirSync(dir).filter((f) => f.startsWith('devices.json.oversize-'));
    assert.equal(aside.length, 1, 'the old file is kept aside');
    assert.equal(statSync(join(dir, aside[0] ?? '')).size, size);
    const error = logged.find((l) => l.level === 'error');
    assert.equal(error?.obj.file, file);
    assert.equal(error?.obj.movedTo, join(dir, aside[0] ?? ''));
  } finally {
    reg.close();
  }
});

test('an oversize file that cannot be parsed is moved aside and the registry starts empty', () => {
  writeFileSync(file, `{"version":1,"secret":"${'x'.repeat(9 * 1024 * 1024)}`);
  const reg = open();
  try {
    assert.deepEqual(reg.list(), { bound: [], pending: [] });
    assert.equal(readdirSync(dir).filter((f) => f.startsWith('devices.json.oversize-')).length, 1);
    assert.match(logged.find((l) => l.level === 'error')?.msg ?? '', /starting empty/);
    assert.equal(JSON.parse(readFileSync(file, 'utf8')).version, 1);
  } finally {
    reg.close();
  }
});

test('a file from before generations keeps its tokens; each new binding of a pair has a new generation', () => {
  writeFileSync(file, JSON.stringify({ version: 1, secret: SECRET, devices: [GOOD], pending: [] }));
  const reg = open();
  try {
    const old = reg.binding(GOOD.deviceId, GOOD.clientId);
    assert.equal(old?.generation, 0);
    assert.equal(deviceToken(SECRET, GOOD.deviceId, GOOD.clientId, 0).length, 43);
    reg.revoke(GOOD.id);
    const gens: number[] = [];
    for (let i = 0; i < 3; i++) {
      const code = reg.pendingCode(GOOD.deviceId, GOOD.clientId);
      assert.ok(code);
      const bound = reg.bind(code.code);
      assert.ok(bound.ok);
      assert.equal(bound.device.generation, code.generation, 'the binding has the generation handed out with its code');
      gens.push(bound.device.generation);
      reg.revoke(GOOD.id);
    }
    assert.equal(new Set([0, ...gens]).size, 4, `all distinct: ${gens.join(',')}`);
    assert.equal(reg.pendingCode('not-a-mac', 'c-1'), null, 'a malformed pair is never stored');
  } finally {
    reg.close();
  }
});
