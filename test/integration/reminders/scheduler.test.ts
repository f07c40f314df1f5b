/**
 * The reminder scheduler on a real store, with a clock moved by hand and a recording Push: a
 * reminder fires once at its time; refused or failed deliveries are tried again and dropped when
 * stale; it survives closing and reopening a SQLite file (also mid-delivery); two schedulers on
 * one PostgreSQL database fire each reminder exactly once; start/stop leave no timer.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ReminderScheduler, type ReminderSchedulerOptions } from '../../../features/reminders/scheduler.ts';
import type { Store } from '../../../store/store.ts';
import { createLogger } from '../../../server/logger.ts';
import { open, postgresTarget, sqliteTarget } from '../../helpers/store-targets.ts';
import { createLogSink, type LogSink } from '../../helpers/log-sink.ts';
import { recordingPush, type RecordingPush } from '../../fixtures/recording-push.ts';

const A = 'a0:00:00:00:00:01';
const B = 'a0:00:00:00:00:02';
const T0 = Date.parse('2026-11-27T17:00:00Z');
const MIN = 60_000;

function scheduler(
  store: Store,
  push: RecordingPush,
  clock: { now: number },
  logs: LogSink = createLogSink(),
  extra: Partial<ReminderSchedulerOptions> = {},
): ReminderScheduler {
  return new ReminderScheduler({
    store: store.reminders,
    push,
    replica: store.replica,
    staleAfterMs: 60 * MIN,
    spoken: (_deviceId, text) => `Reminder: ${text}`,
    log: createLogger({ level: 'debug', logContent: false, destination: logs.stream }),
    now: () => clock.now,
    ...extra,
  });
}

describe('reminder scheduler', () => {
  const sqlite = sqliteTarget();
  const pg = postgresTarget();
  after(async () => {
    await sqlite.close();
    await pg.close();
  });

  test('fires once at its time, on the pair that set it', async () => {
    const store = await open(await sqlite.fresh());
    const push = recordingPush();
    const clock = { now: T0 };
    const s = scheduler(store, push, clock);
    try {
      await store.reminders.add(
        { deviceId: A, clientId: 'client-a', agent: 'home', text: 'take the tea out', dueMs: T0 + 10 * MIN },
        10,
      );
      assert.equal(await s.tick(), 0);
      clock.now = T0 + 10 * MIN - 1;
      assert.equal(await s.tick(), 0);
      assert.deepEqual(push.said, []);
      clock.now = T0 + 10 * MIN;
      assert.equal(await s.tick(), 1);
      assert.deepEqual(push.said, [
        { deviceId: A, clientId: 'client-a', text: 'Reminder: take the tea out', source: 'reminder' },
      ]);
      clock.now += MIN;
      assert.equal(await s.tick(), 0);
      assert.equal(push.said.length, 1, 'fired once');
      assert.deepEqual(await store.reminders.list(A), [], 'a delivered reminder is gone');
      // More due at once than one batch: one poll goes through them all.
      for (let i = 0; i < 45; i++)
        await store.reminders.add(
          { deviceId: i % 2 ? A : B, clientId: 'c', agent: null, text: `n${i}`, dueMs: clock.now - i },
          100,
        );
      assert.equal(await s.tick(), 45);
      assert.equal(push.said.length, 46);
    } finally {
      await s.stop();
      await store.close();
    }
  });

  test('a refused or failed delivery is tried again later, and dropped once stale; an unknown device at once', async () => {
    const store = await open(await sqlite.fresh());
    const push = recordingPush();
    const logs = createLogSink();
    const clock = { now: T0 };
    const s = scheduler(store, push, clock, logs, { retryMs: 30_000 });
    try {
      await store.reminders.add({ deviceId: A, clientId: 'c', agent: null, text: 'offline one', dueMs: T0 }, 10);
      push.answer = () => ({ status: 'refused', reason: 'offline' });
      assert.equal(await s.tick(), 0);
      assert.equal(push.said.length, 1);
      clock.now = T0 + 29_999;
      await s.tick();
      assert.equal(push.said.length, 1, 'not tried again before retryMs');
      clock.now = T0 + 30_000;
      push.answer = () => {
        throw new Error('database hiccup');
      };
      assert.equal(await s.tick(), 0);
      assert.equal((await store.reminders.list(A))[0]?.state, 'pending', 'a failed delivery leaves it pending');
      assert.equal(logs.find('reminders: delivery failed; trying again later').length, 1);
      // Claimed past staleAfterMs: dropped instead of spoken, and logged (its text only under pii).
      clock.now = T0 + 61 * MIN;
      push.answer = () => ({ status: 'spoken' });
      assert.equal(await s.tick(), 0);
      assert.equal(push.said.length, 1);
      assert.deepEqual(await store.reminders.list(A), []);
      const dropped = logs.find('reminders: dropped undelivered');
      assert.equal(dropped.length, 1);
      assert.equal(dropped[0]?.why, 'stale');
      assert.doesNotMatch(logs.text(), /offline one/);

      await store.reminders.add({ deviceId: B, clientId: 'c', agent: null, text: 'nobody', dueMs: clock.now }, 10);
      push.answer = () => ({ status: 'refused', reason: 'unknown_device' });
      await s.tick();
      assert.deepEqual(await store.reminders.list(B), []);
      assert.equal(logs.find('reminders: dropped undelivered').at(-1)?.why, 'unknown_device');
    } finally {
      await s.stop();
      await store.close();
    }
  });

  test('survives closing and reopening a SQLite file, also when it stopped in the middle of a delivery', async () => {
    const db = await sqlite.fresh();
    const clock = { now: T0 };
    let store = await open(db);
    await store.reminders.add(
      { deviceId: A, clientId: 'c', agent: null, text: 'after restart', dueMs: T0 + 5 * MIN },
      10,
    );
    await store.reminders.add({ deviceId: B, clientId: 'c', agent: null, text: 'mid delivery', dueMs: T0 + MIN }, 10);
    // B is claimed, then the process stops before its delivery ends.
    assert.ok(
      await store.reminders.claim((await store.reminders.list(B))[0]?.id ?? -1, store.replica, T0 + 5 * MIN - 30_000),
    );
    await store.close();

    store = await open(db);
    const push = recordingPush();
    const s = scheduler(store, push, clock);
    try {
      clock.now = T0 + 5 * MIN;
      assert.equal(await s.tick(), 1);
      assert.deepEqual(
        push.said.map((m) => m.text),
        ['Reminder: after restart'],
      );
      // The abandoned claim is given back once a minute old, then fired.
      clock.now = T0 + 5 * MIN + 30_001;
      assert.equal(await s.tick(), 1);
      assert.deepEqual(
        push.said.map((m) => m.text),
        ['Reminder: after restart', 'Reminder: mid delivery'],
      );
    } finally {
      await s.stop();
      await store.close();
    }
  });

  test('two schedulers on one PostgreSQL database fire each reminder exactly once', async () => {
    const db = await pg.fresh();
    const one = await open(db, { replica: 'one' });
    const two = await open(db, { replica: 'two' });
    const clock = { now: T0 };
    const pushes = [recordingPush(), recordingPush()] as const;
    const schedulers = [scheduler(one, pushes[0], clock), scheduler(two, pushes[1], clock)];
    try {
      const n = 40;
      for (let i = 0; i < n; i++) {
        const r = await one.reminders.add(
          { deviceId: i % 2 ? A : B, clientId: 'c', agent: null, text: `r${i}`, dueMs: T0 + (i % 4) * 1000 },
          100,
        );
        assert.ok(r !== 'full' && r !== 'store_full');
      }
      for (let step = 0; step < 6; step++) {
        clock.now = T0 + step * 1000;
        await Promise.all(schedulers.map((s) => s.tick()));
        await Promise.all(schedulers.map((s) => s.tick()));
      }
      const texts = [...pushes[0].said, ...pushes[1].said].map((m) => m.text).sort();
      assert.equal(texts.length, n);
      assert.equal(new Set(texts).size, n, 'no reminder was fired twice');
      assert.ok(
        pushes[0].said.length > 0 && pushes[1].said.length > 0,
        `both replicas fired some (${pushes[0].said.length}/${pushes[1].said.length})`,
      );
      assert.deepEqual([...(await one.reminders.list(A)), ...(await one.reminders.list(B))], []);
    } finally {
      await Promise.all(schedulers.map((s) => s.stop()));
      await Promise.all([one.close(), two.close()]);
    }
  });

  test('start polls by itself; stop waits for the poll and leaves no timer', async () => {
    const store = await open(await sqlite.fresh());
    const push = recordingPush();
    const clock = { now: T0 };
    const s = scheduler(store, push, clock, createLogSink(), { pollMs: 10 });
    try {
      await store.reminders.add({ deviceId: A, clientId: 'c', agent: null, text: 'by itself', dueMs: T0 }, 10);
      const timersBefore = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
      s.start();
      await push.waitFor(1);
      await s.stop();
      const timersAfter = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
      assert.equal(timersAfter, timersBefore, 'no timer of the scheduler is left');
      await store.reminders.add({ deviceId: A, clientId: 'c', agent: null, text: 'after stop', dueMs: T0 }, 10);
      await new Promise((r) => setTimeout(r, 100));
      assert.deepEqual(
        push.said.map((m) => m.text),
        ['Reminder: by itself'],
      );
    } finally {
      await s.stop();
      await store.close();
    }
  });
});
