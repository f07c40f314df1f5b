/**
 * Device memory on the store (history, facts, summary), the same cases on SQLite and PostgreSQL:
 * each device and agent sees only its own rows, even when written at the same time.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_FACT_CHARS, MAX_TURN_CHARS } from '../../../store/memory.ts';
import { open, postgresTarget, sqliteTarget } from '../../helpers/store-targets.ts';

const A = 'a0:00:00:00:00:01';
const B = 'a0:00:00:00:00:02';

for (const target of [sqliteTarget(), postgresTarget()]) {
  describe(`device memory on ${target.name}`, () => {
    after(() => target.close());

    test('two devices on one agent writing at once see only their own turns and facts', async () => {
      const store = await open(await target.fresh());
      try {
        await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            store.memory.addTurns([
              { deviceId: i % 2 ? A : B, agent: 'home', role: 'user', text: `${i % 2 ? 'A' : 'B'} says ${i}` },
              { deviceId: i % 2 ? A : B, agent: 'home', role: 'assistant', text: `to ${i % 2 ? 'A' : 'B'} ${i}` },
            ]),
          ),
        );
        await Promise.all([store.memory.remember(A, 'home', 'my name is Ann'), store.memory.remember(B, 'home', 'my name is Bob')]);
        const a = await store.memory.recentTurns(A, 'home', 100);
        const b = await store.memory.recentTurns(B, 'home', 100);
        assert.equal(a.length, 20);
        assert.equal(b.length, 20);
        assert.ok(a.every((t) => t.text.includes('A')) && b.every((t) => t.text.includes('B')));
        assert.deepEqual((await store.memory.facts(A, 'home')).map((f) => f.text), ['my name is Ann']);
        assert.deepEqual((await store.memory.facts(B, 'home')).map((f) => f.text), ['my name is Bob']);
        assert.deepEqual(await store.memory.recentTurns(A, 'other', 100), [], 'another agent of the same device starts clean');
        assert.deepEqual(await store.memory.facts(A, 'other'), []);
        const last = await store.memory.recentTurns(A, 'home', 2);
        assert.deepEqual(last.map((t) => t.role), ['user', 'assistant'], 'the newest turns, oldest first');
      } finally {
        await store.close();
      }
    });

    test('bounded: text cut, facts capped; forget by words or all; summary kept per device and agent; deleteDevice removes all', async () => {
      const store = await open(await target.fresh());
      try {
        await store.memory.addTurns([{ deviceId: A, agent: 'home', role: 'user', text: 'x'.repeat(MAX_TURN_CHARS * 2) }]);
        assert.equal((await store.memory.recentTurns(A, 'home', 1))[0]?.text.length, MAX_TURN_CHARS);
        // Cut at a character, never inside one: no half of an emoji (a lone surrogate) is kept.
        await store.memory.addTurns([{ deviceId: A, agent: 'home', role: 'assistant', text: `a${'\u{1F600}'.repeat(MAX_TURN_CHARS)}` }]);
        const emoji = (await store.memory.recentTurns(A, 'home', 1))[0]?.text ?? '';
        assert.ok(emoji.length <= MAX_TURN_CHARS && emoji.length >= MAX_TURN_CHARS - 1, `cut to ${emoji.length}`);
        assert.doesNotMatch(emoji, /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/, 'a lone surrogate was kept');
        const f = await store.memory.remember(A, 'home', 'y'.repeat(MAX_FACT_CHARS + 10));
        assert.equal(f?.text.length, MAX_FACT_CHARS);
        await store.memory.remember(A, 'home', 'the cat is called Tom');
        assert.equal(await store.memory.forget(A, 'home', 'cat'), 1);
        assert.equal((await store.memory.facts(A, 'home')).length, 1);
        await store.memory.setSummary(A, 'home', 'talked about cats', 5);
        assert.deepEqual(await store.memory.summary(A, 'home'), { text: 'talked about cats', uptoId: 5 });
        await store.memory.setSummary(A, 'home', 'talked about dogs', 7);
        assert.deepEqual(await store.memory.summary(A, 'home'), { text: 'talked about dogs', uptoId: 7 });
        assert.equal(await store.memory.summary(B, 'home'), undefined);
        await store.memory.remember(B, 'home', 'kept');
        await store.memory.forgetAll(A, 'home');
        assert.deepEqual(await store.memory.recentTurns(A, 'home', 10), []);
        assert.deepEqual(await store.memory.facts(A, 'home'), []);
        assert.equal(await store.memory.summary(A, 'home'), undefined);
        assert.equal((await store.memory.facts(B, 'home')).length, 1, 'the other device keeps its facts');
        await store.memory.deleteDevice(B);
        assert.deepEqual(await store.memory.facts(B, 'home'), []);
      } finally {
        await store.close();
      }
    });

    test('revoking a device deletes its memory, and only its', async () => {
      const store = await open(await target.fresh());
      try {
        const code = await store.registry.pendingCode(A, 'c-1', '10.0.0.1');
        assert.ok(code && (await store.registry.bind(code.code, {})).ok);
        await store.memory.addTurns([{ deviceId: A, agent: 'home', role: 'user', text: 'hi' }, { deviceId: B, agent: 'home', role: 'user', text: 'hello' }]);
        await store.memory.remember(A, 'home', 'secret');
        await store.memory.setSummary(A, 'home', 'sum', 1);
        await store.registry.revoke(A);
        assert.deepEqual(await store.memory.history(A, 10), []);
        assert.deepEqual(await store.memory.allFacts(A), []);
        assert.deepEqual(await store.memory.summaries(A), []);
        assert.equal((await store.memory.history(B, 10)).length, 1);
      } finally {
        await store.close();
      }
    });

    test('pruned by age and by turns per device; the unsummarised turns are those past the kept recent ones', async () => {
      let now = Date.parse('2026-01-01T00:00:00Z');
      const store = await open(await target.fresh(), { now: () => now });
      try {
        await store.memory.addTurns([{ deviceId: A, agent: 'home', role: 'user', text: 'old' }]);
        now += 100 * 86_400_000;
        for (let i = 0; i < 6; i++) await store.memory.addTurns([{ deviceId: B, agent: 'home', role: 'user', text: `b${i}` }]);
        await store.memory.addTurns([{ deviceId: A, agent: 'home', role: 'user', text: 'new' }]);
        const removed = await store.memory.prune({ retentionDays: 90, maxTurnsPerDevice: 4 });
        assert.equal(removed, 3);
        assert.deepEqual((await store.memory.recentTurns(A, 'home', 10)).map((t) => t.text), ['new']);
        assert.deepEqual((await store.memory.recentTurns(B, 'home', 10)).map((t) => t.text), ['b2', 'b3', 'b4', 'b5']);
        const past = await store.memory.unsummarised(B, 'home', 2);
        assert.deepEqual(past.map((t) => t.text), ['b2', 'b3']);
        const history = await store.memory.history(B, 10);
        assert.equal(history.length, 4);
      } finally {
        await store.close();
      }
    });
  });
}
