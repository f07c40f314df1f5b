/**
 * Two processes on one database (here two stores: the CLI and the server, or two replicas): what
 * one writes reaches the other's cache and listeners within 2 s, on SQLite (polled) and PostgreSQL
 * (LISTEN/NOTIFY). PostgreSQL going away while running: the requests that need it fail, the cached
 * state keeps answering, and both the pool and the listening connection come back by themselves.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { BoundDevice } from '../../../store/identity-registry-types.ts';
import type { StoreChange } from '../../../store/types.ts';
import { StoreError } from '../../../store/connect.ts';
import { openStore } from '../../../store/store.ts';
import { silentLogger } from '../../../core/logger.ts';
import { createLogger } from '../../../server/logger.ts';
import { createLogSink } from '../../helpers/log-sink.ts';
import { open, postgresTarget, sqliteTarget } from '../../helpers/store-targets.ts';
import { waitFor } from '../../helpers/wait.ts';

/** How soon a change must reach another process. */
const WITHIN_MS = 2000;
const PAIR = ['a0:00:00:00:00:01', 'c-1'] as const;

for (const target of [sqliteTarget(), postgresTarget()]) {
  describe(`change feed on ${target.name}`, () => {
    after(() => target.close());

    test("a memory change of one pair reaches the other process with its Client-Id (only that pair's sessions re-read), one of every pair without", async () => {
      const db = await target.fresh();
      const a = await open(db, { replica: 'a' });
      const b = await open(db, { replica: 'b' });
      try {
        const onB: StoreChange[] = [];
        b.onChange((c) => {
          if (c.kind === 'memory') onB.push(c);
        });
        await a.memory.deleteDevice(PAIR[0], PAIR[1]);
        await a.memory.deleteDevice(PAIR[0]);
        await waitFor(() => onB.length >= 2, { what: 'both memory changes on b', timeoutMs: WITHIN_MS * 2 });
        assert.deepEqual(onB, [
          { kind: 'memory', deviceId: PAIR[0], clientId: PAIR[1] },
          { kind: 'memory', deviceId: PAIR[0] },
        ]);
      } finally {
        await a.close();
        await b.close();
      }
    });

    test('a bind, a revoke and an agent change made by one reach the other within 2 s (listeners too); its own changes are not told twice', async () => {
      const db = await target.fresh();
      const a = await open(db, { replica: 'a' });
      const b = await open(db, { replica: 'b' });
      try {
        const boundOnB: BoundDevice[] = [];
        const revokedOnB: BoundDevice[] = [];
        const changesOnA: StoreChange[] = [];
        b.registry.onBound((d) => boundOnB.push(...d));
        b.registry.onRevoked((d) => revokedOnB.push(...d));
        a.onChange((c) => changesOnA.push(c));

        const code = await a.registry.pendingCode(...PAIR, '10.0.0.1');
        assert.ok(code);
        assert.ok((await a.registry.bind(code.code)).ok);
        let t0 = performance.now();
        await waitFor(() => b.registry.isBound(...PAIR), {
          what: 'the binding on the other store',
          timeoutMs: WITHIN_MS,
        });
        const bindMs = performance.now() - t0;
        assert.equal(boundOnB.length, 1);
        assert.equal(b.registry.binding(...PAIR)?.generation, code.generation);

        await a.agents.create('teacher', { systemPrompt: 'one' });
        await a.devices.update(PAIR[0], { agent: 'teacher' });
        await waitFor(() => b.cache.agentNameOf(PAIR[0]) === 'teacher' && b.cache.agent('teacher'), {
          what: 'the agent and the device on the other store',
          timeoutMs: WITHIN_MS,
        });
        t0 = performance.now();
        await a.agents.update('teacher', { systemPrompt: 'two' });
        await waitFor(() => b.cache.agent('teacher')?.settings.systemPrompt === 'two', {
          what: 'the agent update on the other store',
          timeoutMs: WITHIN_MS,
        });
        const agentMs = performance.now() - t0;

        t0 = performance.now();
        assert.equal((await a.registry.revoke(PAIR[0])).length, 1);
        await waitFor(() => revokedOnB.length === 1, { what: 'onRevoked on the other store', timeoutMs: WITHIN_MS });
        const revokeMs = performance.now() - t0;
        assert.equal(b.registry.isBound(...PAIR), false);
        // Writes by b reach a too.
        await b.agents.delete('teacher');
        await waitFor(() => a.cache.agent('teacher') === undefined && a.cache.agentNameOf(PAIR[0]) === null, {
          what: 'the delete on the first store',
          timeoutMs: WITHIN_MS,
        });
        const agentChangesOnA = changesOnA.filter((c) => c.kind === 'agent' && c.name === 'teacher');
        assert.equal(
          agentChangesOnA.length,
          3,
          `create, update (each told once), delete: ${JSON.stringify(agentChangesOnA)}`,
        );
        process.stderr.write(
          `# ${target.name}: bind ${bindMs.toFixed(0)} ms, agent ${agentMs.toFixed(0)} ms, revoke ${revokeMs.toFixed(0)} ms\n`,
        );
      } finally {
        await a.close();
        await b.close();
      }
    });
  });
}

describe('an unreachable or lost database', () => {
  const pg = postgresTarget();
  after(() => pg.close());

  test('unreachable at start: a StoreError naming store.url (password hidden)', async () => {
    const err = await openStore({
      url: 'postgres://app:hunter2@127.0.0.1:1/xiaozhi',
      dataDir: '/nonexistent',
      secret: '',
      codeTtlMs: 1000,
      pendingPerSource: 3,
      replica: 'x',
      log: silentLogger,
    }).then(
      () => assert.fail('opened'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof StoreError);
    assert.match(
      err.message,
      /^store\.url postgres:\/\/\[Redacted\]@127\.0\.0\.1:1\/xiaozhi: cannot reach the database/,
    );
    assert.equal(err.message.includes('hunter2'), false);
    await assert.rejects(
      openStore({
        url: 'mysql://x',
        dataDir: '/tmp',
        secret: '',
        codeTtlMs: 1000,
        pendingPerSource: 3,
        replica: 'x',
        log: silentLogger,
      }),
      /store\.url mysql:\/\/x is not understood/,
    );
  });

  test('PostgreSQL restarted while running: cached bindings keep answering, the lost feed is logged at error, the pool and the feed come back', async () => {
    const db = await pg.fresh();
    const sink = createLogSink();
    const log = createLogger({ level: 'info', logContent: false, destination: sink.stream });
    const a = await open(db, { replica: 'a', log });
    const b = await open(db, { replica: 'b' });
    try {
      const code = await a.registry.pendingCode(...PAIR, '10.0.0.1');
      assert.ok(code && (await a.registry.bind(code.code)).ok);
      await waitFor(() => b.registry.isBound(...PAIR), { what: 'the binding on b', timeoutMs: WITHIN_MS });
      const cluster = pg.cluster();
      await cluster.restart();
      // The cache still answers the hot path.
      assert.ok(a.registry.isBound(...PAIR));
      await waitFor(() => sink.lines.some((l) => l.level === 50 && /change feed connection lost/.test(String(l.msg))), {
        what: 'the lost feed logged at error',
        timeoutMs: 10_000,
      });
      await waitFor(() => sink.lines.some((l) => /change feed reconnected/.test(String(l.msg))), {
        what: 'the feed to reconnect',
        timeoutMs: 15_000,
      });
      // The pool gives new connections: writes work again, and reach the other store.
      await waitFor(async () => (await b.agents.create('after-restart', {}).catch(() => undefined)) !== undefined, {
        what: 'a write after the restart',
        timeoutMs: 10_000,
      });
      // Not WITHIN_MS: right after a restart a's first reads may meet pooled connections the
      // restart killed (the full suite on 2 busy cores once took over 2 s); what is tested is
      // that the change arrives, not how fast.
      await waitFor(() => a.cache.agent('after-restart'), {
        what: 'the change to reach a through its new listening connection',
        timeoutMs: 10_000,
      });
    } finally {
      await a.close();
      await b.close();
    }
  });
});
