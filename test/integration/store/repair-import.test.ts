/**
 * A database holding what it should not (malformed or oversized identities, more pending codes than
 * the cap) still opens, drops the bad rows with a warning and keeps the good ones; the registry
 * file of earlier versions is imported once at the first start (secret, generation, bindings,
 * pending codes) and renamed. The same cases on SQLite and PostgreSQL.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MAX_PENDING } from '../../../store/identity-registry.ts';
import { deviceToken, verifyBinding } from '../../../features/identity/device-token.ts';
import { createLogger } from '../../../server/logger.ts';
import { createLogSink } from '../../helpers/log-sink.ts';
import { open, postgresTarget, raw, sqliteTarget } from '../../helpers/store-targets.ts';

const SECRET = 's'.repeat(43);
const GOOD = {
  id: '0123456789',
  deviceId: 'a0:b1:c2:d3:e4:f5',
  clientId: '6f1c1d2e-1111-4222-8333-444455556666',
  boundAt: '2026-01-01T00:00:00.000Z',
};
const PENDING_OK = { code: '123456', deviceId: 'a0:b1:c2:d3:e4:01', clientId: 'c-1', expiresAt: 9e12 };

for (const target of [sqliteTarget(), postgresTarget()]) {
  describe(`repair and import on ${target.name}`, () => {
    after(() => target.close());

    test('malformed and excess rows are purged at start with a warning; the good ones kept', async () => {
      const db = await target.fresh();
      await (await open(db)).close();
      const conn = await raw(db);
      // PostgreSQL enforces the column lengths itself; SQLite stores whatever it is given.
      const huge = target.name === 'sqlite' ? 'a'.repeat(125 * 1024) : 'zz:zz:zz:zz:zz:zz';
      const hugeClient = target.name === 'sqlite' ? huge : 'tab\there';
      const binding = (id: string, device_id: string, client_id: string) => ({
        id,
        device_id,
        client_id,
        bound_at: GOOD.boundAt,
        generation: 1,
      });
      await conn.db
        .insertInto('bindings')
        .values([
          binding(GOOD.id, GOOD.deviceId, GOOD.clientId),
          binding('abcdefabcd', huge, 'c'),
          binding('abcdefabce', 'not-a-mac-address', 'c'),
          binding('abcdefabcf', 'a0:b1:c2:d3:e4:f6', hugeClient),
        ])
        .execute();
      const pending = (
        code: string,
        i: number,
        device_id = `a0:00:00:00:01:${(i & 255).toString(16).padStart(2, '0')}`,
      ) => ({
        code,
        device_id,
        client_id: `c-${i}`,
        source: 's',
        expires_ms: 9e12 - i,
        created_ms: 0,
        generation: i + 1,
      });
      // Two more than the cap, one of them malformed.
      const rows = Array.from({ length: MAX_PENDING + 1 }, (_, i) => pending(String(100000 + i), i));
      await conn.db
        .insertInto('pending_codes')
        .values([...rows, pending('654321', 999, huge)])
        .execute();
      await conn.db.destroy();

      const sink = createLogSink();
      const store = await open(db, {
        log: createLogger({ level: 'info', logContent: false, destination: sink.stream }),
      });
      try {
        const { bound, pending: left } = await store.registry.list();
        assert.deepEqual(
          bound.map((d) => d.id),
          [GOOD.id],
        );
        assert.equal(left.length, MAX_PENDING);
        assert.equal(
          left.some((p) => p.code === String(100000 + MAX_PENDING)),
          false,
          'the code expiring first went',
        );
        assert.ok(store.registry.isBound(GOOD.deviceId, GOOD.clientId));
        const warn = sink.lines.find((l) => l.level === 40);
        assert.equal(warn?.dropped, 5, sink.text().slice(0, 500));
        // New generations continue past every stored one (the address that holds codes replaces its oldest).
        const code = await store.registry.pendingCode('a0:00:00:00:09:09', 'c-new', 's');
        assert.ok((code?.generation ?? 0) > MAX_PENDING, `generation ${code?.generation}`);
      } finally {
        await store.close();
      }
    });

    test('devices.json is imported once: its secret (tokens keep working), generation, bindings, live codes; bad rows left out; the file renamed', async () => {
      const db = await target.fresh();
      const file = join(db.dataDir, 'devices.json');
      const huge = 'b'.repeat(125 * 1024);
      writeFileSync(
        file,
        JSON.stringify({
          version: 1,
          secret: SECRET,
          generation: 7,
          devices: [
            GOOD,
            { ...GOOD, id: 'abcdefabcd', deviceId: huge },
            { ...GOOD, id: 'abcdefabce', deviceId: 'not-a-mac' },
            'junk',
          ],
          pending: [
            { ...PENDING_OK, generation: 7 },
            { ...PENDING_OK, code: '654321', deviceId: huge, clientId: huge },
            { ...PENDING_OK, code: '111111', deviceId: 'a0:b1:c2:d3:e4:02', expiresAt: 1 },
          ],
        }),
      );
      const sink = createLogSink();
      const store = await open(db, {
        log: createLogger({ level: 'info', logContent: false, destination: sink.stream }),
      });
      try {
        assert.equal(store.registry.secret(), SECRET);
        assert.equal(
          store.registry.binding(GOOD.deviceId, GOOD.clientId)?.generation,
          0,
          'a binding from before generations keeps generation 0',
        );
        assert.ok(
          verifyBinding(
            store.registry,
            GOOD.deviceId,
            GOOD.clientId,
            deviceToken(SECRET, GOOD.deviceId, GOOD.clientId, 0),
          ),
          'its old token still works',
        );
        assert.deepEqual(
          (await store.registry.list()).pending.map((p) => p.code),
          [PENDING_OK.code],
        );
        assert.equal(existsSync(file), false);
        assert.ok(existsSync(`${file}.imported`));
        const info = sink.lines.find((l) => l.level === 30 && l.file === file);
        assert.deepEqual(
          { bound: info?.bound, pending: info?.pending, dropped: info?.dropped },
          { bound: 1, pending: 1, dropped: 5 },
        );
        const next = await store.registry.pendingCode('a0:00:00:00:00:0c', 'c-12', 'x');
        assert.equal(next?.generation, 8, "the counter continues after the file's");
        const bind = await store.registry.bind(PENDING_OK.code);
        assert.ok(bind.ok && bind.device.generation === 7);
      } finally {
        await store.close();
      }
      // Not imported again: a file put back later is left alone (the database is no longer empty).
      writeFileSync(
        file,
        JSON.stringify({ version: 1, secret: 't'.repeat(43), generation: 0, devices: [], pending: [] }),
      );
      const again = await open(db);
      try {
        assert.equal(again.registry.secret(), SECRET);
        assert.ok(existsSync(file));
      } finally {
        await again.close();
      }
    });
  });
}
