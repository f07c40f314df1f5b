/**
 * Device records, agents and live sessions on the store, the same cases on SQLite and PostgreSQL.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_RECORDS } from '../../../store/device-records.ts';
import { REPLICA_TIMEOUT_MS } from '../../../store/live-sessions.ts';
import { open, postgresTarget, raw, sqliteTarget } from '../../helpers/store-targets.ts';

for (const target of [sqliteTarget(), postgresTarget()]) {
  describe(`records, agents and sessions on ${target.name}`, () => {
    after(() => target.close());

    test('seen: first seen kept, last seen bumped, board and firmware when given; a stranger claiming a bound MAC changes nothing', async () => {
      let now = Date.parse('2026-01-01T00:00:00Z');
      const store = await open(await target.fresh(), { now: () => now });
      try {
        await store.devices.seen({ deviceId: 'A0:00:00:00:00:01', clientId: 'C-1', board: 'bread', firmware: '1.0.0' });
        now += 60_000;
        await store.devices.seen({ deviceId: 'a0:00:00:00:00:01', clientId: 'c-1', firmware: '1.1.0' });
        const r = await store.devices.get('a0:00:00:00:00:01');
        assert.deepEqual(r, {
          deviceId: 'a0:00:00:00:00:01',
          clientId: 'c-1',
          alias: null,
          agent: null,
          board: 'bread',
          firmware: '1.1.0',
          firstSeen: '2026-01-01T00:00:00.000Z',
          lastSeen: '2026-01-01T00:01:00.000Z',
        });
        await store.devices.seen({ deviceId: 'not-a-mac', clientId: 'c' });
        await store.devices.seen({ deviceId: 'a0:00:00:00:00:02', clientId: 'c-2', board: 'x'.repeat(5000) });
        assert.equal((await store.devices.get('a0:00:00:00:00:02'))?.board?.length, 100, 'labels are stored bounded');
        assert.equal((await store.devices.list()).length, 2);

        const code = await store.registry.pendingCode('a0:00:00:00:00:01', 'c-1', '10.0.0.1');
        assert.ok(code && (await store.registry.bind(code.code, { alias: 'Kitchen' })).ok);
        await store.devices.seen({ deviceId: 'a0:00:00:00:00:01', clientId: 'impostor', board: 'evil' });
        const kept = await store.devices.get('a0:00:00:00:00:01');
        assert.deepEqual({ c: kept?.clientId, b: kept?.board, a: kept?.alias }, { c: 'c-1', b: 'bread', a: 'Kitchen' });
      } finally {
        await store.close();
      }
    });

    test('records are bounded: past the cap a new device replaces the longest-unseen unnamed one', async () => {
      const db = await target.fresh();
      const store = await open(db);
      const conn = await raw(db);
      try {
        const rows = Array.from({ length: MAX_RECORDS }, (_, i) => ({
          device_id: `b0:00:00:00:${(i >> 8).toString(16).padStart(2, '0')}:${(i & 255).toString(16).padStart(2, '0')}`,
          client_id: `c-${i}`,
          alias: i === 0 ? 'named' : null,
          agent: null,
          board: null,
          firmware: null,
          first_seen: '2026-01-01T00:00:00.000Z',
          last_seen: new Date(Date.parse('2026-01-01T00:00:00Z') + i * 1000).toISOString(),
        }));
        for (let i = 0; i < rows.length; i += 500)
          await conn.db
            .insertInto('devices')
            .values(rows.slice(i, i + 500))
            .execute();
        await store.devices.seen({ deviceId: 'c0:00:00:00:00:01', clientId: 'newcomer' });
        const all = await store.devices.list();
        assert.equal(all.length, MAX_RECORDS);
        assert.ok(all.some((d) => d.deviceId === 'c0:00:00:00:00:01'));
        assert.ok(
          all.some((d) => d.alias === 'named'),
          'a named device is never the one replaced',
        );
        assert.equal(
          all.some((d) => d.deviceId === 'b0:00:00:00:00:01'),
          false,
          'the longest-unseen unnamed one went',
        );
      } finally {
        await conn.db.destroy();
        await store.close();
      }
    });

    test('agents: create once, update, the cache follows; deleting one moves its devices to the default; ensure leaves an existing one alone', async () => {
      const store = await open(await target.fresh());
      try {
        const changes: string[] = [];
        const off = store.onChange((c) =>
          changes.push(
            c.kind === 'agent'
              ? `agent:${c.name}`
              : c.kind === 'device'
                ? `device:${c.deviceId}`
                : `binding:${c.deviceId}`,
          ),
        );
        const made = await store.agents.create('teacher', { systemPrompt: 'Teach.' });
        assert.deepEqual(made?.settings, { systemPrompt: 'Teach.' });
        assert.equal(await store.agents.create('teacher', {}), undefined);
        assert.deepEqual(store.cache.agent('teacher')?.settings, { systemPrompt: 'Teach.' });
        const updated = await store.agents.update('teacher', { systemPrompt: 'Teach kindly.' });
        assert.deepEqual(updated?.settings, { systemPrompt: 'Teach kindly.' });
        assert.deepEqual(store.cache.agent('teacher')?.settings, { systemPrompt: 'Teach kindly.' });
        assert.equal(await store.agents.update('nobody', {}), undefined);

        await store.devices.seen({ deviceId: 'a0:00:00:00:00:03', clientId: 'c-3' });
        assert.equal(
          (await store.devices.update('a0:00:00:00:00:03', { agent: 'teacher', alias: 'Desk' }))?.agent,
          'teacher',
        );
        assert.equal(store.cache.agentNameOf('A0:00:00:00:00:03'), 'teacher');
        assert.equal(await store.devices.update('a0:00:00:00:00:99', { agent: 'teacher' }), undefined);

        await store.agents.ensure('teacher', { systemPrompt: 'from config' }, ['a0:00:00:00:00:04', 'bad']);
        assert.deepEqual(
          (await store.agents.get('teacher'))?.settings,
          { systemPrompt: 'Teach kindly.' },
          'left alone when present',
        );
        assert.equal(
          store.cache.agentNameOf('a0:00:00:00:00:04'),
          'teacher',
          'a listed device without an agent gets it',
        );
        await store.agents.ensure('helper', { systemPrompt: 'Help.' }, ['a0:00:00:00:00:03']);
        assert.equal(store.cache.agentNameOf('a0:00:00:00:00:03'), 'teacher', 'a device that has an agent keeps it');
        assert.deepEqual(
          store.cache.agents().map((a) => a.name),
          ['helper', 'teacher'],
        );

        assert.equal(await store.agents.delete('teacher'), true);
        assert.equal(await store.agents.delete('teacher'), false);
        assert.equal(store.cache.agent('teacher'), undefined);
        assert.equal(store.cache.agentNameOf('a0:00:00:00:00:03'), null);
        assert.equal((await store.devices.get('a0:00:00:00:00:03'))?.agent, null);
        off();
        await store.agents.create('after', {});
        assert.ok(changes.includes('agent:teacher') && changes.includes('device:a0:00:00:00:00:03'));
        assert.equal(changes.includes('agent:after'), false, 'unsubscribed');
      } finally {
        await store.close();
      }
    });

    test("live sessions: every replica's, and a replica that stopped heart-beating is dropped", async () => {
      const db = await target.fresh();
      const a = await open(db, { replica: 'host-a:1' });
      const b = await open(db, { replica: 'host-b:2' });
      const conn = await raw(db);
      try {
        const since = new Date().toISOString();
        await a.sessions.add({
          sessionId: 's-a',
          deviceId: 'a0:00:00:00:00:01',
          clientId: 'c-1',
          agent: null,
          replica: 'host-a:1',
          since,
        });
        await b.sessions.add({
          sessionId: 's-b',
          deviceId: null,
          clientId: null,
          agent: 'teacher',
          replica: 'host-b:2',
          since,
        });
        assert.deepEqual((await a.sessions.list()).map((s) => `${s.sessionId}@${s.replica}`).sort(), [
          's-a@host-a:1',
          's-b@host-b:2',
        ]);
        await conn.db
          .updateTable('replicas')
          .set({ heartbeat_ms: Date.now() - REPLICA_TIMEOUT_MS - 1000 })
          .where('replica', '=', 'host-b:2')
          .execute();
        assert.deepEqual(
          (await a.sessions.list()).map((s) => s.sessionId),
          ['s-a'],
        );
        await a.sessions.remove('s-a');
        assert.deepEqual(await a.sessions.list(), []);
      } finally {
        await conn.db.destroy();
        await a.close();
        await b.close();
      }
    });
  });
}
