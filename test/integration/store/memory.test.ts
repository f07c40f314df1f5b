/**
 * Device memory on the store (history, facts, summary), the same cases on SQLite and PostgreSQL:
 * each identity pair (Device-Id + Client-Id) and agent sees only its own rows, even when written at
 * the same time; the operator moves one pair's memory to another; the schema migration gives rows
 * stored before pairs to the pair the device record names, and keeps the others reachable.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql, type Kysely } from 'kysely';
import { Migrator } from 'kysely/migration';
import { MAX_FACT_CHARS, MAX_FACTS, MAX_TURN_CHARS } from '../../../store/memory.ts';
import { migrationProvider } from '../../../store/migrations.ts';
import type { StoreChange } from '../../../store/types.ts';
import { open, postgresTarget, raw, sqliteTarget } from '../../helpers/store-targets.ts';

const A = 'a0:00:00:00:00:01';
const B = 'a0:00:00:00:00:02';
const PA = { deviceId: A, clientId: 'client-a' };
const PB = { deviceId: B, clientId: 'client-b' };

for (const target of [sqliteTarget(), postgresTarget()]) {
  describe(`device memory on ${target.name}`, () => {
    after(() => target.close());

    test('two devices on one agent writing at once see only their own turns and facts', async () => {
      const store = await open(await target.fresh());
      try {
        await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            store.memory.addTurns([
              { ...(i % 2 ? PA : PB), agent: 'home', role: 'user', text: `${i % 2 ? 'A' : 'B'} says ${i}` },
              { ...(i % 2 ? PA : PB), agent: 'home', role: 'assistant', text: `to ${i % 2 ? 'A' : 'B'} ${i}` },
            ]),
          ),
        );
        await Promise.all([
          store.memory.remember(PA, 'home', 'my name is Ann'),
          store.memory.remember(PB, 'home', 'my name is Bob'),
        ]);
        const a = await store.memory.recentTurns(PA, 'home', 100);
        const b = await store.memory.recentTurns(PB, 'home', 100);
        assert.equal(a.length, 20);
        assert.equal(b.length, 20);
        assert.ok(a.every((t) => t.text.includes('A')) && b.every((t) => t.text.includes('B')));
        assert.deepEqual(
          (await store.memory.facts(PA, 'home')).map((f) => f.text),
          ['my name is Ann'],
        );
        assert.deepEqual(
          (await store.memory.facts(PB, 'home')).map((f) => f.text),
          ['my name is Bob'],
        );
        assert.deepEqual(
          await store.memory.recentTurns(PA, 'other', 100),
          [],
          'another agent of the same device starts clean',
        );
        assert.deepEqual(await store.memory.facts(PA, 'other'), []);
        const last = await store.memory.recentTurns(PA, 'home', 2);
        assert.deepEqual(
          last.map((t) => t.role),
          ['user', 'assistant'],
          'the newest turns, oldest first',
        );
      } finally {
        await store.close();
      }
    });

    test('bounded: text cut, facts capped; forget by words or all; summary kept per device and agent; deleteDevice removes all', async () => {
      const store = await open(await target.fresh());
      try {
        await store.memory.addTurns([{ ...PA, agent: 'home', role: 'user', text: 'x'.repeat(MAX_TURN_CHARS * 2) }]);
        assert.equal((await store.memory.recentTurns(PA, 'home', 1))[0]?.text.length, MAX_TURN_CHARS);
        // Cut at a character, never inside one: no half of an emoji (a lone surrogate) is kept.
        await store.memory.addTurns([
          { ...PA, agent: 'home', role: 'assistant', text: `a${'\u{1F600}'.repeat(MAX_TURN_CHARS)}` },
        ]);
        const emoji = (await store.memory.recentTurns(PA, 'home', 1))[0]?.text ?? '';
        assert.ok(emoji.length <= MAX_TURN_CHARS && emoji.length >= MAX_TURN_CHARS - 1, `cut to ${emoji.length}`);
        assert.doesNotMatch(
          emoji,
          /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/,
          'a lone surrogate was kept',
        );
        const f = await store.memory.remember(PA, 'home', 'y'.repeat(MAX_FACT_CHARS + 10));
        assert.equal(f?.text.length, MAX_FACT_CHARS);
        await store.memory.remember(PA, 'home', 'the cat is called Tom');
        assert.equal(await store.memory.forget(PA, 'home', 'cat'), 1);
        assert.equal((await store.memory.facts(PA, 'home')).length, 1);
        await store.memory.setSummary(PA, 'home', 'talked about cats', 5);
        assert.deepEqual(await store.memory.summary(PA, 'home'), { text: 'talked about cats', uptoId: 5 });
        await store.memory.setSummary(PA, 'home', 'talked about dogs', 7);
        assert.deepEqual(await store.memory.summary(PA, 'home'), { text: 'talked about dogs', uptoId: 7 });
        assert.equal(await store.memory.summary(PB, 'home'), undefined);
        await store.memory.remember(PB, 'home', 'kept');
        await store.memory.forgetAll(PA, 'home');
        assert.deepEqual(await store.memory.recentTurns(PA, 'home', 10), []);
        assert.deepEqual(await store.memory.facts(PA, 'home'), []);
        assert.equal(await store.memory.summary(PA, 'home'), undefined);
        assert.equal((await store.memory.facts(PB, 'home')).length, 1, 'the other device keeps its facts');
        await store.memory.deleteDevice(B);
        assert.deepEqual(await store.memory.facts(PB, 'home'), []);
      } finally {
        await store.close();
      }
    });

    test('revoking a device deletes its memory, and only its', async () => {
      const store = await open(await target.fresh());
      try {
        const code = await store.registry.pendingCode(A, 'c-1', '10.0.0.1');
        assert.ok(code && (await store.registry.bind(code.code, {})).ok);
        await store.memory.addTurns([
          { ...PA, agent: 'home', role: 'user', text: 'hi' },
          { ...PB, agent: 'home', role: 'user', text: 'hello' },
        ]);
        await store.memory.remember(PA, 'home', 'secret');
        await store.memory.setSummary(PA, 'home', 'sum', 1);
        await store.registry.revoke(A);
        assert.deepEqual(await store.memory.history(A, 10), []);
        assert.deepEqual(await store.memory.allFacts(A, 100), []);
        assert.deepEqual(await store.memory.summaries(A, 100), []);
        assert.equal((await store.memory.history(B, 10)).length, 1);
      } finally {
        await store.close();
      }
    });

    test('pruned by age and by turns per device; the unsummarised turns are those past the kept recent ones', async () => {
      let now = Date.parse('2026-01-01T00:00:00Z');
      const store = await open(await target.fresh(), { now: () => now });
      try {
        await store.memory.addTurns([{ ...PA, agent: 'home', role: 'user', text: 'old' }]);
        now += 100 * 86_400_000;
        for (let i = 0; i < 6; i++)
          await store.memory.addTurns([{ ...PB, agent: 'home', role: 'user', text: `b${i}` }]);
        await store.memory.addTurns([{ ...PA, agent: 'home', role: 'user', text: 'new' }]);
        const removed = await store.memory.prune({ retentionDays: 90, maxTurnsPerDevice: 4 });
        assert.equal(removed, 3);
        assert.deepEqual(
          (await store.memory.recentTurns(PA, 'home', 10)).map((t) => t.text),
          ['new'],
        );
        assert.deepEqual(
          (await store.memory.recentTurns(PB, 'home', 10)).map((t) => t.text),
          ['b2', 'b3', 'b4', 'b5'],
        );
        const past = await store.memory.unsummarised(PB, 'home', 2);
        assert.deepEqual(
          past.map((t) => t.text),
          ['b2', 'b3'],
        );
        const history = await store.memory.history(B, 10);
        assert.equal(history.length, 4);
      } finally {
        await store.close();
      }
    });
    test('two Client-Ids of one MAC are two pairs: each sees only its own turns, facts and summary; the admin views show both; deleting one leaves the other', async () => {
      let now = Date.parse('2026-01-01T00:00:00Z');
      const store = await open(await target.fresh(), { now: () => now });
      const first = { deviceId: A, clientId: 'first' };
      const stranger = { deviceId: A, clientId: 'Stranger' };
      try {
        await store.memory.addTurns([{ ...first, agent: 'home', role: 'user', text: 'my daughter is Mia' }]);
        now += 1000;
        await store.memory.addTurns([{ ...stranger, agent: 'home', role: 'user', text: 'who am I' }]);
        await store.memory.remember(first, 'home', 'the daughter is Mia');
        await store.memory.setSummary(first, 'home', 'talked about Mia', 1);
        assert.deepEqual(
          (await store.memory.recentTurns(stranger, 'home', 10)).map((t) => t.text),
          ['who am I'],
        );
        assert.deepEqual(await store.memory.facts(stranger, 'home'), []);
        assert.equal(await store.memory.summary(stranger, 'home'), undefined);
        assert.deepEqual(await store.memory.unsummarised(stranger, 'home', 0).then((t) => t.map((x) => x.text)), [
          'who am I',
        ]);
        assert.deepEqual(
          (await store.memory.recentTurns({ deviceId: A, clientId: 'FIRST' }, 'home', 10)).map((t) => t.text),
          ['my daughter is Mia'],
          'case never tells two clients apart',
        );
        // The admin's views: every pair, each row with its Client-Id (lower case).
        assert.deepEqual(
          (await store.memory.history(A, 10)).map((t) => [t.clientId, t.text]),
          [
            ['first', 'my daughter is Mia'],
            ['stranger', 'who am I'],
          ],
        );
        assert.deepEqual(
          (await store.memory.history(A, 10, 'stranger')).map((t) => t.text),
          ['who am I'],
        );
        assert.deepEqual(
          (await store.memory.allFacts(A, 100)).map((f) => [f.clientId, f.text]),
          [['first', 'the daughter is Mia']],
        );
        assert.deepEqual(
          (await store.memory.summaries(A, 100)).map((x) => [x.clientId, x.text]),
          [['first', 'talked about Mia']],
        );
        assert.deepEqual(
          (await store.memory.holders(A, 100)).map((h) => [h.clientId, h.turns, h.facts, h.summaries]).sort(),
          [
            ['first', 1, 1, 1],
            ['stranger', 1, 0, 0],
          ],
        );
        // Bounded views (anyone may invent Client-Ids in open mode): the most recently talking pairs first.
        assert.deepEqual(
          (await store.memory.holders(A, 1)).map((h) => h.clientId),
          ['stranger'],
        );
        assert.equal((await store.memory.allFacts(A, 0)).length, 0);
        const changes: StoreChange[] = [];
        store.onChange((c) => changes.push(c));
        await store.memory.deleteDevice(A, 'stranger');
        assert.deepEqual(changes, [{ kind: 'memory', deviceId: A, clientId: 'stranger' }]);
        assert.deepEqual(await store.memory.history(A, 10, 'stranger'), []);
        assert.equal((await store.memory.history(A, 10, 'first')).length, 1, 'the other pair keeps its memory');
        await store.memory.deleteDevice(A);
        assert.deepEqual(await store.memory.holders(A, 100), []);
      } finally {
        await store.close();
      }
    });

    test('move gives everything of one pair to another in one go: turns, facts (capped), summaries (the newer kept), reminders and waiting messages', async () => {
      const store = await open(await target.fresh());
      const old = { deviceId: A, clientId: 'old-client' };
      const fresh = { deviceId: A, clientId: 'new-client' };
      try {
        await store.memory.addTurns([{ ...old, agent: 'home', role: 'user', text: 'old words' }]);
        await store.memory.addTurns([{ ...fresh, agent: 'home', role: 'user', text: 'new words' }]);
        for (let i = 0; i < MAX_FACTS; i++) await store.memory.remember(old, 'home', `old fact ${i}`);
        await store.memory.remember(fresh, 'home', 'new fact');
        await store.memory.setSummary(old, 'home', 'old summary', 1);
        await store.memory.setSummary(fresh, 'home', 'new summary', 2);
        await store.memory.setSummary(old, 'study', 'study summary', 1);
        const reminder = await store.reminders.add(
          { ...old, agent: 'home', text: 'tea', dueMs: Date.now() + 60_000 },
          10,
        );
        assert.ok(typeof reminder === 'object');
        await store.pushMessages.add(
          {
            id: 'waiting-1',
            ...old,
            text: 'you missed a call',
            interrupt: false,
            source: 'admin',
            expiresMs: Date.now() + 60_000,
          },
          10,
        );
        const changes: StoreChange[] = [];
        store.onChange((c) => changes.push(c));

        const moved = await store.memory.move(A, 'old-client', 'new-client');
        assert.deepEqual(moved, { turns: 1, facts: MAX_FACTS, summaries: 1, reminders: 1, messages: 1 });
        assert.deepEqual(
          await store.memory.holders(A, 100).then((h) => h.map((x) => x.clientId)),
          ['new-client'],
          'the old pair holds nothing',
        );
        assert.deepEqual(
          (await store.memory.recentTurns(fresh, 'home', 10)).map((t) => t.text),
          ['old words', 'new words'],
        );
        const facts = (await store.memory.facts(fresh, 'home')).map((f) => f.text);
        assert.equal(facts.length, MAX_FACTS, 'capped');
        assert.ok(facts.includes('new fact') && !facts.includes('old fact 0'), 'the oldest went');
        assert.equal(
          (await store.memory.summary(fresh, 'home'))?.text,
          'new summary',
          'the summary of the newer turns stays',
        );
        assert.equal((await store.memory.summary(fresh, 'study'))?.text, 'study summary');
        assert.deepEqual(
          (await store.reminders.list(A, 'new-client')).map((r) => r.text),
          ['tea'],
        );
        assert.deepEqual(
          (await store.pushMessages.claimFor(A, 'new-client', 'R1')).map((m) => m.id),
          ['waiting-1'],
        );
        assert.deepEqual(changes, [
          { kind: 'memory', deviceId: A, clientId: 'old-client' },
          { kind: 'memory', deviceId: A, clientId: 'new-client' },
          { kind: 'push', id: 'waiting-1', deviceId: A },
        ]);
        assert.deepEqual(
          await store.memory.move(A, 'new-client', 'new-client'),
          { turns: 0, facts: 0, summaries: 0, reminders: 0, messages: 0 },
          'onto itself: nothing',
        );
      } finally {
        await store.close();
      }
    });

    test('the migration to pairs: rows stored before go to the pair the device record names; those of a device without a record stay, unassigned, and can be moved', async () => {
      const db = await target.fresh();
      // A database as the previous version left it (schema 0005), with its rows.
      const conn = await raw(db);
      const old = conn.db as unknown as Kysely<unknown>;
      const migrator = new Migrator({
        db: old,
        provider: migrationProvider(conn.dialect),
        migrationTableName: 'schema_migrations',
        migrationLockTableName: 'schema_migrations_lock',
      });
      const to5 = await migrator.migrateTo('0005-reminders');
      assert.equal(to5.error, undefined);
      const at = '2026-01-01T00:00:00.000Z';
      await sql`insert into devices (device_id, client_id, first_seen, last_seen) values (${A}, 'recorded-client', ${at}, ${at})`.execute(
        old,
      );
      for (const d of [A, B]) {
        await sql`insert into conversation_turns (device_id, agent, role, text, created_at) values (${d}, 'home', 'user', ${`turn of ${d}`}, ${at})`.execute(
          old,
        );
        await sql`insert into memory_facts (device_id, agent, fact, created_at, updated_at) values (${d}, 'home', ${`fact of ${d}`}, ${at}, ${at})`.execute(
          old,
        );
        await sql`insert into memory_summaries (device_id, agent, text, upto_id, updated_at) values (${d}, 'home', ${`summary of ${d}`}, 1, ${at})`.execute(
          old,
        );
        await sql`insert into push_messages (id, device_id, client_id, text, interrupt, source, state, created_ms, expires_ms) values (${`msg-${d}`}, ${d}, null, 'waiting', 0, 'admin', 'pending', 1, ${Date.now() + 3_600_000})`.execute(
          old,
        );
      }
      await sql`insert into reminders (device_id, client_id, agent, text, due_ms, next_ms, state, created_at) values (${A}, 'Recorded-Client', 'home', 'tea', 1, 1, 'pending', ${at})`.execute(
        old,
      );
      await conn.db.destroy();

      const store = await open(db);
      try {
        assert.equal(store.version, '0006-pair-memory');
        const recorded = { deviceId: A, clientId: 'recorded-client' };
        assert.deepEqual(
          (await store.memory.recentTurns(recorded, 'home', 10)).map((t) => t.text),
          [`turn of ${A}`],
        );
        assert.deepEqual(
          (await store.memory.facts(recorded, 'home')).map((f) => f.text),
          [`fact of ${A}`],
        );
        assert.equal((await store.memory.summary(recorded, 'home'))?.text, `summary of ${A}`);
        assert.deepEqual(
          (await store.reminders.list(A, 'recorded-client')).map((r) => r.text),
          ['tea'],
        );
        assert.deepEqual(
          (await store.pushMessages.claimFor(A, 'recorded-client', 'R1')).map((m) => m.id),
          [`msg-${A}`],
        );
        // No record: unassigned. No session reads it; the admin sees it and moves it.
        assert.deepEqual(
          await store.memory.holders(B, 100).then((h) => h.map((x) => [x.clientId, x.turns, x.facts, x.summaries])),
          [[null, 1, 1, 1]],
        );
        assert.deepEqual(
          (await store.memory.history(B, 10, null)).map((t) => [t.clientId, t.text]),
          [[null, `turn of ${B}`]],
        );
        assert.deepEqual(await store.memory.move(B, null, 'found-client'), {
          turns: 1,
          facts: 1,
          summaries: 1,
          reminders: 0,
          messages: 0,
        });
        const found = { deviceId: B, clientId: 'found-client' };
        assert.deepEqual(
          (await store.memory.recentTurns(found, 'home', 10)).map((t) => t.text),
          [`turn of ${B}`],
        );
        assert.equal((await store.memory.summary(found, 'home'))?.text, `summary of ${B}`);
        assert.equal(
          (await store.pushMessages.get(`msg-${B}`))?.clientId,
          null,
          'a waiting message nobody can be named for stays, for no pair',
        );
        // The new summary key: one per pair and agent.
        await store.memory.setSummary({ deviceId: B, clientId: 'other' }, 'home', 'another pair', 2);
        assert.equal((await store.memory.summaries(B, 100)).length, 2);
      } finally {
        await store.close();
      }
    });

    test("pruned per pair: one Client-Id filling its turns does not push out another pair's", async () => {
      const store = await open(await target.fresh());
      const quiet = { deviceId: A, clientId: 'quiet' };
      const busy = { deviceId: A, clientId: 'busy' };
      try {
        await store.memory.addTurns([{ ...quiet, agent: 'home', role: 'user', text: 'kept' }]);
        for (let i = 0; i < 6; i++)
          await store.memory.addTurns([{ ...busy, agent: 'home', role: 'user', text: `busy ${i}` }]);
        assert.equal(await store.memory.prune({ retentionDays: 90, maxTurnsPerDevice: 4 }), 2);
        assert.deepEqual(
          (await store.memory.recentTurns(quiet, 'home', 10)).map((t) => t.text),
          ['kept'],
        );
        assert.deepEqual(
          (await store.memory.recentTurns(busy, 'home', 10)).map((t) => t.text),
          ['busy 2', 'busy 3', 'busy 4', 'busy 5'],
        );
      } finally {
        await store.close();
      }
    });
  });
}
